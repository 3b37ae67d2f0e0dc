package results

import (
	"math"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// Metric is one per-request figure that summaries describe.
type Metric struct {
	Name  string // the summary's metric name, unit included: ttft_ms, output_tokens, ...
	Unit  string // "ms" or "count"
	value func(*record.Request) (float64, bool)
}

func msOf(get func(*record.Request) *time.Duration) func(*record.Request) (float64, bool) {
	return func(r *record.Request) (float64, bool) {
		if d := get(r); d != nil {
			return float64(*d) / 1e6, true
		}
		return 0, false
	}
}

// metrics lists the summarised metrics in the order summaries show them.
var metrics = []Metric{
	{"ttft_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.TTFT })},
	{"tpot_event_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.TPOTEvent })},
	{"tpot_token_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.TPOTToken })},
	{"e2e_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.E2E })},
	{"itl_median_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.ITLMedian })},
	{"output_tokens", "count", func(r *record.Request) (float64, bool) {
		if r.OutputTokens != nil {
			return float64(*r.OutputTokens), true
		}
		return 0, false
	}},
	{"text_events", "count", func(r *record.Request) (float64, bool) { return float64(r.TextEvents), true }},
	{"send_lag_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.SendLag })},
	{"server_ttft_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.ServerTTFT })},
	{"client_overhead_ms", "ms", msOf(func(r *record.Request) *time.Duration { return r.ClientOverhead })},
}

// loadMetrics are the metrics that only requests sent under a load section have. A config
// without load has no rows for them, so that its summary reads as it did before loads existed.
var loadMetrics = map[string]bool{"send_lag_ms": true}

// LoadOnly reports whether only requests sent under a load section have the metric (send_lag_ms):
// summaries and comparisons of configs without load leave it out.
func (m Metric) LoadOnly() bool { return loadMetrics[m.Name] }

// serverMetrics are the metrics that only requests the server's /metrics described have: sent
// alone, to a server that serves them.
var serverMetrics = map[string]bool{"server_ttft_ms": true, "client_overhead_ms": true}

// PresentOnly reports whether the metric is described only where requests have it
// (server_ttft_ms, client_overhead_ms: only requests the server's /metrics described have
// them): summaries and comparisons leave it out of a config none of whose successful measured
// requests has a value, so that folders without server timings read as they did before.
func (m Metric) PresentOnly() bool { return serverMetrics[m.Name] }

// Metrics returns the summarised metrics in order.
func Metrics() []Metric { return append([]Metric(nil), metrics...) }

// SummaryRow is one row of summary.csv: one metric of one config, over its measured requests.
type SummaryRow struct {
	ConfigIndex int    // the config's position in the expansion, -1 if the manifest lacks it
	ConfigID    string //
	ServerID    string //
	Label       string //
	Metric      string // a Metric name
	NFailed     int    // measured requests of the config that failed
	NMissing    int    // successful measured requests without this metric (e.g. tpot_* with one text event)
	stats.Summary
}

// SummaryCSV is summary.csv: one row per config and metric. Values are written with six
// decimals; NaN (undefined) is an empty cell, and reads back as NaN; warnings are joined with
// "; ".
var SummaryCSV = &Table[SummaryRow]{file: SummaryFile, cols: []column[SummaryRow]{
	intCol("config_index", func(s *SummaryRow) *int { return &s.ConfigIndex }),
	strCol("config_id", func(s *SummaryRow) *string { return &s.ConfigID }),
	strCol("server_id", func(s *SummaryRow) *string { return &s.ServerID }),
	strCol("label", func(s *SummaryRow) *string { return &s.Label }),
	strCol("metric", func(s *SummaryRow) *string { return &s.Metric }),
	intCol("n", func(s *SummaryRow) *int { return &s.N }),
	intCol("n_failed", func(s *SummaryRow) *int { return &s.NFailed }),
	intCol("n_missing", func(s *SummaryRow) *int { return &s.NMissing }),
	floatCol("min", 6, func(s *SummaryRow) *float64 { return &s.Min }),
	floatCol("median", 6, func(s *SummaryRow) *float64 { return &s.Median }),
	floatCol("p95", 6, func(s *SummaryRow) *float64 { return &s.P95 }),
	floatCol("p99", 6, func(s *SummaryRow) *float64 { return &s.P99 }),
	floatCol("max", 6, func(s *SummaryRow) *float64 { return &s.Max }),
	floatCol("mean", 6, func(s *SummaryRow) *float64 { return &s.Mean }),
	floatCol("stddev", 6, func(s *SummaryRow) *float64 { return &s.Stddev }),
	floatCol("median_ci_low", 6, func(s *SummaryRow) *float64 { return &s.MedianCILow }),
	floatCol("median_ci_high", 6, func(s *SummaryRow) *float64 { return &s.MedianCIHigh }),
	floatCol("median_ci_level", 6, func(s *SummaryRow) *float64 { return &s.MedianCILevel }),
	listCol("warnings", func(s *SummaryRow) *[]string { return &s.Warnings }),
}}

// Summarize describes each config's measured requests, one row per config and metric, configs
// in expansion order (then any config the list lacks, in order of first appearance) and metrics
// in Metrics order; the load-only metrics (see Metric.LoadOnly) only for a config with a load
// section or rows sent under one, and the present-only ones (see Metric.PresentOnly) only for a
// config with a successful measured request that has them. It leaves out warm-up rows, the first request after a boot (phase first)
// and failed rows, and counts the failed ones in NFailed. Warnings say what the numbers rest on:
// too few samples, failures, estimated token counts, disagreeing token counts.
func Summarize(configs []experiment.Config, reqs []record.Request) []SummaryRow {
	d := NewDigest(configs)
	for i := range reqs {
		d.Add(&reqs[i])
	}
	return d.Summary()
}

// isMissing reports whether a summary value is undefined.
func isMissing(f float64) bool { return math.IsNaN(f) }

// ClockSpread is how far the mean SM clocks of a config's measured requests may spread, as a
// share of their median, before the summary warns: a few percent is boost noise, more means
// the requests ran at different clocks.
const ClockSpread = 0.03

// gpuWarnings says when the GPU was not in one state over a config's measured requests: when
// requests overlapped power or thermal throttling, or when their mean SM clocks spread by more
// than ClockSpread. Requests without telemetry say nothing.
func gpuWarnings(ok []*record.Request) []string {
	var g ConfigDigest
	for _, r := range ok {
		g.addGPU(r)
	}
	return g.gpuWarnings()
}
