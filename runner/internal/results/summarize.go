package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
	var out []SummaryRow
	for _, g := range GroupByConfig(inExpansionOrder(configs), reqs) {
		c := g.Config
		base := SummaryRow{ConfigIndex: c.Index, ConfigID: c.ID, ServerID: c.ServerID, Label: c.Label}
		// loaded: the config has a load section, or one of its rows says it was sent under one.
		loaded := c.Load != nil
		for _, r := range g.Requests {
			loaded = loaded || r.LoadMode != record.LoadNone || r.SendLag != nil
		}
		var ok []*record.Request
		var failed, measured int
		for _, r := range g.Requests {
			if r.Phase != record.PhaseMeasure {
				continue
			}
			measured++
			if r.Status != record.StatusOK {
				failed++
				continue
			}
			ok = append(ok, r)
		}
		var common []string
		if failed > 0 {
			common = append(common, fmt.Sprintf("%d of %d measured requests failed", failed, measured))
		}
		hits := 0
		for _, r := range ok {
			if r.CacheHitAfterReset {
				hits++
			}
		}
		if hits > 0 {
			common = append(common, fmt.Sprintf("%d of %d measured requests hit the prefix cache after it was reset: the reset did not take", hits, len(ok)))
		}
		common = append(common, gpuWarnings(ok)...)
		for _, m := range metrics {
			if m.LoadOnly() && !loaded || m.PresentOnly() && !anyValue(m, ok) {
				continue
			}
			row := base
			row.Metric = m.Name
			row.NFailed = failed
			var xs []float64
			for _, r := range ok {
				if v, has := m.value(r); has {
					xs = append(xs, v)
				} else {
					row.NMissing++
				}
			}
			row.Summary = stats.Summarize(xs)
			row.Warnings = append(append([]string(nil), common...), row.Warnings...)
			if row.NMissing > 0 {
				row.Warnings = append(row.Warnings, fmt.Sprintf("%d successful requests have no %s", row.NMissing, m.Name))
			}
			row.Warnings = append(row.Warnings, metricWarnings(m.Name, ok)...)
			out = append(out, row)
		}
	}
	return out
}

// anyValue reports whether one of reqs has a value of m.
func anyValue(m Metric, reqs []*record.Request) bool {
	for _, r := range reqs {
		if _, ok := m.value(r); ok {
			return true
		}
	}
	return false
}

// metricWarnings says what a metric's values rest on, where that is worth knowing.
func metricWarnings(metric string, ok []*record.Request) []string {
	var w []string
	switch metric {
	case "tpot_token_ms":
		var est, n int
		for _, r := range ok {
			if r.TPOTToken != nil {
				n++
				if !r.TPOTTokenExact {
					est++
				}
			}
		}
		if est > 0 {
			w = append(w, fmt.Sprintf("%d of %d values estimated from (output tokens − 1) without per-event token counts", est, n))
		}
	case "output_tokens":
		sources := map[record.TokenSource]int{}
		var disagree int
		for _, r := range ok {
			if r.OutputTokens != nil {
				sources[r.TokenSource]++
			}
			seen := map[int]bool{}
			for _, p := range []*int{r.TokensFromIDs, r.TokensFromUsage, r.TokensFromTokenize} {
				if p != nil {
					seen[*p] = true
				}
			}
			if len(seen) > 1 {
				disagree++
			}
		}
		if len(sources) > 1 {
			var parts []string
			for s, n := range sources {
				name := string(s)
				if name == "" {
					name = "unknown"
				}
				parts = append(parts, fmt.Sprintf("%s %d", name, n))
			}
			sort.Strings(parts)
			w = append(w, "counts come from several sources: "+strings.Join(parts, ", "))
		} else if sources[record.SourceTiktoken] > 0 {
			w = append(w, "counts are tiktoken approximations, not the model's tokenizer")
		}
		if disagree > 0 {
			w = append(w, fmt.Sprintf("%d requests have token counts that disagree between ids, usage and /tokenize", disagree))
		}
	}
	return w
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
	var w []string
	var throttled, sampled int
	var clocks []float64
	for _, r := range ok {
		if r.GPUThrottled != nil {
			sampled++
			if *r.GPUThrottled {
				throttled++
			}
		}
		if r.GPUSMClockMeanMHz != nil {
			clocks = append(clocks, *r.GPUSMClockMeanMHz)
		}
	}
	if throttled > 0 {
		w = append(w, fmt.Sprintf("%d of %d measured requests overlapped GPU power or thermal throttling (telemetry.csv names the reasons): their latencies are not those of the GPU at full clocks", throttled, sampled))
	}
	if len(clocks) > 1 {
		lo, hi := slices.Min(clocks), slices.Max(clocks)
		if med := stats.Summarize(clocks).Median; med > 0 && (hi-lo)/med > ClockSpread {
			why := "boost and power management changed the clock between requests"
			if throttled > 0 {
				why = "throttling lowered it"
			}
			w = append(w, fmt.Sprintf("the GPU's SM clock varied by %.1f%% over the measured requests (%.0f to %.0f MHz, mean per request), more than %.0f%%: %s, so the latencies mix clock states",
				100*(hi-lo)/med, lo, hi, 100*ClockSpread, why))
		}
	}
	return w
}
