// Package results writes and reads result folders, the versioned contract that diffs and
// reports are built on.
//
// A run writes one new folder, results/<experiment>/<UTC time>-<6 hex digits>/, and never
// overwrites an existing one. It holds:
//
//	manifest.json   what was run, where and how; status running|complete|interrupted|failed
//	                (incomplete: a partial merge of shard folders, see package merge)
//	configs.csv     one row per config, its axis values as columns
//	requests.csv    one row per request, warm-up rows included, every metric
//	events.csv      one row per streamed event
//	outputs.jsonl   the generated text of each request
//	errors.jsonl    the error text of each failed request
//	servers.csv     one row per server boot: boot time, exit status, log file
//	summary.csv     per config and metric: n, min, median, p95, p99, max, mean, stddev, CI
//	load.csv        per config, as a load point: achieved rate, throughput, goodput, send lag
//	telemetry.csv   the GPUs' clocks, temperature, power and throttle reasons, about ten
//	                samples a second while a server ran; only where a GPU was sampled
//	load_server.csv per load point, what the server's /metrics said between a scrape before
//	                and one after it, written as each load point ends; load.csv carries its
//	                columns too. Only where a load point's server was scraped
//	datapackage.json the CSV files' columns and types (a Frictionless tabular data package)
//	logs/           the servers' own logs
//	discarded/      the rows of partial load points that a resume set aside (see Folder.Discard)
//
// Every file carries FormatVersion (a schema_version column or field), and readers refuse a
// version they do not know. Rows are appended and flushed as each request completes, so a
// crash loses at most the request in flight; Resume finishes such a folder, dropping a torn last
// line and any rows of a request that was not completely written.
package results

// FormatVersion is the version of the result folder format that this package writes and reads.
const FormatVersion = 1

// The files of a result folder.
const (
	ManifestFile = "manifest.json"
	ConfigsFile  = "configs.csv"
	RequestsFile = "requests.csv"
	EventsFile   = "events.csv"
	OutputsFile  = "outputs.jsonl"
	ErrorsFile   = "errors.jsonl"
	ServersFile  = "servers.csv"
	SummaryFile  = "summary.csv"
	LoadFile     = "load.csv" // folders written before it lack it
	// TelemetryFile holds the GPU samples; only folders of runs that sampled a GPU have it.
	TelemetryFile = "telemetry.csv"
	SchemaFile    = "datapackage.json" // the CSV files' columns and types; folders written before it lack it
	LogsDir       = "logs"
	lockFile      = ".lock"
)

// LoadServerFile holds the server's figures per load point; only folders of runs that scraped
// a load point's server have it.
const LoadServerFile = "load_server.csv"
