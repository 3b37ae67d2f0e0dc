package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// LoadRow is one row of load.csv: one config's measured requests as a load point.
//
// The measured window runs from the earliest t0 of the config's measured requests (failed ones
// included: they were sent inside the load point) to the latest end of its successful measured
// requests (a failed request has no end). Rates divide by that window; with no successful
// measured request there is no window and every rate is NaN.
type LoadRow struct {
	ConfigIndex int    // the config's position in the expansion, -1 if the manifest lacks it
	ConfigID    string //
	ServerID    string //
	Label       string //

	LoadMode    record.LoadMode // "" for a config without a load section
	Concurrency int             // closed loop: requests in flight; open loop: the cap (0 none)
	TargetRate  float64         // open loop: requests/s asked for; NaN otherwise

	Measured  int // measured requests
	Completed int // of which ok
	Failed    int // of which failed

	Window           time.Duration // first measured t0 to last measured end; 0 without one (load.csv: seconds, to the microsecond)
	AchievedRate     float64       // Measured / Window, requests/s (every measured request, failed or not, was sent inside the window: docs/run.md); NaN without a window
	OutputTokensPerS float64       // output tokens of the successful measured requests / Window; NaN without a window

	SendLagP50  *time.Duration // over measured requests with a send lag; nil when none has one
	SendLagP99  *time.Duration //
	InFlightMax int            // most requests in flight when one of the measured requests was sent; 0 without load

	Good        *int    // measured requests meeting every SLO bound; nil without an SLO
	Goodput     float64 // Good / Window, requests/s; NaN without an SLO or without a window
	SLOAttained float64 // Good / Measured (a failed request is never good); NaN without an SLO

	// Server is what the server's /metrics said about the load point (load_server.csv, see
	// JoinLoadServer); empty where it was not scraped. load.csv carries these columns only in
	// a folder that has load_server.csv.
	Server LoadServer
}

// loadWithoutServer is load.csv as a folder without load_server.csv has it: LoadCSV without the
// server's figures.
var loadWithoutServer = &Table[LoadRow]{file: LoadFile, cols: []column[LoadRow]{
	intCol("config_index", func(l *LoadRow) *int { return &l.ConfigIndex }),
	strCol("config_id", func(l *LoadRow) *string { return &l.ConfigID }),
	strCol("server_id", func(l *LoadRow) *string { return &l.ServerID }),
	strCol("label", func(l *LoadRow) *string { return &l.Label }),
	typedStrCol("load_mode", func(l *LoadRow) *record.LoadMode { return &l.LoadMode }),
	zeroIsMissingIntCol("concurrency", func(l *LoadRow) *int { return &l.Concurrency }),
	floatCol("target_rate_rps", 6, func(l *LoadRow) *float64 { return &l.TargetRate }),
	intCol("measured", func(l *LoadRow) *int { return &l.Measured }),
	intCol("completed", func(l *LoadRow) *int { return &l.Completed }),
	intCol("failed", func(l *LoadRow) *int { return &l.Failed }),
	{Column: Column{Name: "window_s", Kind: KindFloat},
		get: func(l *LoadRow) string {
			if l.Window == 0 {
				return ""
			}
			return formatSeconds(l.Window)
		},
		set: func(l *LoadRow, s string) error {
			if s == "" {
				l.Window = 0
				return nil
			}
			var err error
			l.Window, err = parseSeconds(s)
			return err
		}},
	floatCol("achieved_rate_rps", 6, func(l *LoadRow) *float64 { return &l.AchievedRate }),
	floatCol("output_tokens_per_s", 6, func(l *LoadRow) *float64 { return &l.OutputTokensPerS }),
	signedMsCol("send_lag_p50_ms", func(l *LoadRow) **time.Duration { return &l.SendLagP50 }),
	signedMsCol("send_lag_p99_ms", func(l *LoadRow) **time.Duration { return &l.SendLagP99 }),
	zeroIsMissingIntCol("in_flight_max", func(l *LoadRow) *int { return &l.InFlightMax }),
	optIntCol("good", func(l *LoadRow) **int { return &l.Good }),
	floatCol("goodput_rps", 6, func(l *LoadRow) *float64 { return &l.Goodput }),
	floatCol("slo_attained", 6, func(l *LoadRow) *float64 { return &l.SLOAttained }),
}}

// LoadCSV is load.csv: one row per config, its measured requests as a load point. NaN and nil
// values are empty cells, and an empty float cell reads as NaN. Its last columns are the
// server's figures of each load point, which a folder writes only where it has
// load_server.csv: a load.csv without them reads as load points without server figures, and
// Write leaves them out unless a row has server figures (ColumnsOf(nil) are the columns
// without them). Its encoder writes every column.
var LoadCSV = &Table[LoadRow]{file: LoadFile,
	cols: slices.Concat(loadWithoutServer.cols,
		addedLater(loadServerCols(func(l *LoadRow) *LoadServer { return &l.Server })...)),
	shape: func(t *Table[LoadRow], rows []LoadRow) *Table[LoadRow] {
		for i := range rows {
			if !rows[i].Server.empty() {
				return t
			}
		}
		return loadWithoutServer
	},
	inFolder: func(t *Table[LoadRow], _ []ConfigRow, has func(string) bool) []Column {
		if has != nil && has(LoadServerFile) {
			return t.Columns()
		}
		return loadWithoutServer.Columns()
	},
}

// formatSeconds writes a duration as seconds with six decimals, rounded to the microsecond, as
// every float column has a fixed number of decimals.
func formatSeconds(d time.Duration) string {
	d = d.Round(time.Microsecond)
	sign, u := "", uint64(d)
	if d < 0 {
		sign, u = "-", uint64(-d)
	}
	return sign + strconv.FormatUint(u/1e9, 10) + "." + fmt.Sprintf("%06d", u%1e9/1e3)
}

// parseSeconds reads seconds back into a duration, exactly for up to nine decimals.
func parseSeconds(s string) (time.Duration, error) {
	f, err := parseFloat(s)
	if err != nil {
		return 0, err
	}
	ip, fp, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if isDigits(ip) && (fp == "" || isDigits(fp)) && len(fp) <= 9 && len(ip) <= 10 {
		whole, _ := strconv.ParseInt(ip, 10, 64)
		frac, _ := strconv.ParseInt(fp+strings.Repeat("0", 9-len(fp)), 10, 64)
		if whole > (math.MaxInt64-frac)/1e9 {
			return 0, fmt.Errorf("not a number of seconds that a duration holds: %q", s)
		}
		d := time.Duration(whole*1e9 + frac)
		if strings.HasPrefix(s, "-") {
			d = -d
		}
		return d, nil
	}
	return time.Duration(math.Round(f * 1e9)), nil
}

// SummarizeLoad describes each config's measured requests as a load point: one row per config,
// every config with or without a load section, in expansion order (then any config the list
// lacks, in order of first appearance). Warm-up rows and the first request after a boot are
// left out, as in Summarize. A request is good when it succeeded and every bound of its
// config's SLO holds; a bound on a metric the request lacks (a tpot of a request with one text
// event) does not hold.
func SummarizeLoad(configs []experiment.Config, reqs []record.Request) []LoadRow {
	d := NewDigest(configs)
	for i := range reqs {
		d.Add(&reqs[i])
	}
	return d.Load()
}

// meetsSLO reports whether the successful request r meets every bound; a bound on a metric
// that r lacks, or that no summary describes, does not hold.
func meetsSLO(r *record.Request, slo []experiment.Bound) bool {
	if len(slo) == 0 {
		return false
	}
	for _, b := range slo {
		m, ok := metricByName(b.Metric)
		if !ok {
			return false
		}
		v, has := m.value(r)
		if !has || v > b.Max {
			return false
		}
	}
	return true
}

// metricByName returns the summarised metric called name.
func metricByName(name string) (Metric, bool) {
	for _, m := range metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// msDuration converts milliseconds back to a duration, rounded to the nanosecond.
func msDuration(ms float64) *time.Duration {
	if math.IsNaN(ms) {
		return nil
	}
	d := time.Duration(math.Round(ms * 1e6))
	return &d
}

// loadCSV renders rows as load.csv, with the server columns when server is set (the folder has
// load_server.csv), so that a folder without server figures keeps the file it always had.
func loadCSV(rows []LoadRow, server bool) []byte {
	t := loadWithoutServer
	if server {
		t = LoadCSV
	}
	recs := [][]string{t.header()}
	for i := range rows {
		recs = append(recs, t.row(&rows[i]))
	}
	return encodeCSV(recs...)
}
