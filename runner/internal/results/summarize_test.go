package results

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

func TestSummarizeSelectsAndWarns(t *testing.T) {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
	row := func(phase record.Phase, ttft float64) record.Request {
		return record.Request{ConfigID: "a", Phase: phase, Status: record.StatusOK, TTFT: ms(ttft), E2E: ms(ttft + 100),
			TPOTEvent: ms(2), TPOTToken: ms(2), TPOTTokenExact: true, ITLMedian: ms(2), TextEvents: 10,
			OutputTokens: record.Int(10), TokenSource: record.SourceUsage, TokensFromUsage: record.Int(10)}
	}
	var reqs []record.Request
	reqs = append(reqs, row(record.PhaseFirst, 1000), row(record.PhaseWarmup, 900))
	for i, ttft := range []float64{30, 10, 60, 20, 50, 40} {
		r := row(record.PhaseMeasure, ttft)
		if i < 2 {
			r.TPOTTokenExact = false
		}
		if i == 5 {
			r.TokenSource, r.TokensFromTiktoken = record.SourceTiktoken, record.Int(11)
			r.TokensFromUsage = nil
		}
		reqs = append(reqs, r)
	}
	one := row(record.PhaseMeasure, 70) // one text event: no tpot, no itl
	one.TPOTEvent, one.TPOTToken, one.ITLMedian, one.TextEvents, one.TPOTTokenExact = nil, nil, nil, 1, false
	one.TokenSource, one.TokensFromTiktoken, one.TokensFromUsage = record.SourceTiktoken, record.Int(1), record.Int(1)
	one.TokensFromIDs = record.Int(2) // disagrees with usage; tiktoken, an approximation, is not compared
	reqs = append(reqs, one)
	bad := row(record.PhaseMeasure, 5)
	bad.Status, bad.ErrorClass = record.StatusFailed, record.ErrTimeout
	reqs = append(reqs, bad)
	reqs = append(reqs, record.Request{ConfigID: "stray", ServerID: "s9", Phase: record.PhaseMeasure, Status: record.StatusOK})

	configs := []experiment.Config{{ID: "b", Index: 1, Label: "B"}, {ID: "a", Index: 0, Label: "A", ServerID: "s1"}}
	rows := Summarize(configs, reqs)
	if len(rows) != 3*len(plainMetrics()) {
		t.Fatalf("%d rows", len(rows))
	}
	get := func(id, metric string) SummaryRow {
		for _, r := range rows {
			if r.ConfigID == id && r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no row for %s %s", id, metric)
		return SummaryRow{}
	}
	// Configs in expansion order, then the stray one; metrics in order within each.
	for i, r := range rows {
		want := []string{"a", "b", "stray"}[i/len(plainMetrics())]
		if r.ConfigID != want || r.Metric != plainMetrics()[i%len(plainMetrics())].Name {
			t.Errorf("row %d is %s %s", i, r.ConfigID, r.Metric)
		}
	}

	// ttft over the seven successful measured rows 10..70: first, warm-up and failed left out.
	// p95: rank 0.95·6 = 5.7 → 60 + 0.7·10 = 67. B(7,½): P(B=0) = 1/128 ≤ 0.025 < P(B≤1) = 8/128,
	// so the interval is [x(1), x(7)] with coverage 1 − 2/128.
	ttft := get("a", "ttft_ms")
	if ttft.ConfigIndex != 0 || ttft.Label != "A" || ttft.ServerID != "s1" || ttft.N != 7 || ttft.NFailed != 1 || ttft.NMissing != 0 ||
		ttft.Min != 10 || ttft.Median != 40 || ttft.Max != 70 || ttft.Mean != 40 || math.Abs(ttft.P95-67) > 1e-9 ||
		ttft.MedianCILow != 10 || ttft.MedianCIHigh != 70 || ttft.MedianCILevel != 1-2.0/128 {
		t.Errorf("ttft_ms row: %+v", ttft)
	}
	wantWarn := []string{"1 of 8 measured requests failed", "n=7: p95 and p99 lie between the two largest values"}
	if !reflect.DeepEqual(ttft.Warnings, wantWarn) {
		t.Errorf("ttft_ms warnings %q, want %q", ttft.Warnings, wantWarn)
	}
	tpot := get("a", "tpot_token_ms")
	if tpot.N != 6 || tpot.NMissing != 1 || tpot.Median != 2 {
		t.Errorf("tpot_token_ms row: %+v", tpot)
	}
	wantWarn = []string{"1 of 8 measured requests failed", "n=6: p95 and p99 lie between the two largest values",
		"1 successful requests have no tpot_token_ms",
		"2 of 6 values estimated from (output tokens − 1) without per-event token counts"}
	if !reflect.DeepEqual(tpot.Warnings, wantWarn) {
		t.Errorf("tpot_token_ms warnings %q, want %q", tpot.Warnings, wantWarn)
	}
	out := get("a", "output_tokens")
	wantWarn = []string{"1 of 8 measured requests failed", "n=7: p95 and p99 lie between the two largest values",
		"counts come from several sources: tiktoken 2, usage 5",
		"1 requests have token counts that disagree between ids, usage and /tokenize"}
	if out.N != 7 || !reflect.DeepEqual(out.Warnings, wantWarn) {
		t.Errorf("output_tokens row: %+v\nwant warnings %q", out, wantWarn)
	}
	if ev := get("a", "text_events"); ev.N != 7 || ev.Min != 1 || ev.Max != 10 {
		t.Errorf("text_events row: %+v", ev)
	}

	empty := get("b", "ttft_ms")
	if empty.N != 0 || empty.NFailed != 0 || !math.IsNaN(empty.Median) || !reflect.DeepEqual(empty.Warnings, []string{"no samples"}) {
		t.Errorf("row of a config without requests: %+v", empty)
	}
	stray := get("stray", "ttft_ms")
	if stray.ConfigIndex != -1 || stray.Label != "stray" || stray.N != 0 || stray.NMissing != 1 {
		t.Errorf("row of a config the list lacks: %+v", stray)
	}
}

// plainMetrics returns the metrics that every config's summary has.
func plainMetrics() []Metric {
	var out []Metric
	for _, m := range Metrics() {
		if !m.LoadOnly() && !m.PresentOnly() {
			out = append(out, m)
		}
	}
	return out
}

// TestSummarizeSendLag checks that send_lag_ms is summarised for a config under load, over its
// successful measured requests, and left out for a config without load.
func TestSummarizeSendLag(t *testing.T) {
	var reqs []record.Request
	for i, lag := range []float64{0.5, 0.1, 0.3} {
		r := loadReq("loaded", float64(i), 100, 10, 5)
		r.LoadMode, r.Concurrency, r.SendLag = record.LoadClosed, 2, record.Dur(time.Duration(lag*1e6))
		reqs = append(reqs, r, loadReq("plain", float64(i), 100, 10, 5))
	}
	configs := []experiment.Config{{ID: "plain", Index: 0}, {ID: "loaded", Index: 1, Load: &experiment.LoadSpec{Concurrency: 2}}}
	rows := Summarize(configs, reqs)
	if len(rows) != 2*len(plainMetrics())+1 {
		t.Fatalf("%d rows, want %d", len(rows), 2*len(plainMetrics())+1)
	}
	for _, r := range rows {
		if r.Metric != "send_lag_ms" {
			continue
		}
		if r.ConfigID != "loaded" || r.N != 3 || r.Median != 0.3 || r.Min != 0.1 || r.Max != 0.5 {
			t.Errorf("send_lag_ms row: %+v", r)
		}
	}
	if last := rows[len(rows)-1]; last.Metric != "send_lag_ms" {
		t.Errorf("last row is %s %s, want send_lag_ms last", last.ConfigID, last.Metric)
	}
}

// TestSummarizeWarnsCacheHitAfterReset: measured requests that hit the prefix cache after a
// reset give one warning on every row of their config, and none elsewhere.
func TestSummarizeWarnsCacheHitAfterReset(t *testing.T) {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
	var reqs []record.Request
	for _, id := range []string{"a", "b"} {
		for i := range 4 {
			r := record.Request{ConfigID: id, Phase: record.PhaseMeasure, Status: record.StatusOK, TTFT: ms(10 + float64(i)),
				E2E: ms(50), TextEvents: 1, CacheReset: true, PrefixCacheHits: record.Int(0)}
			if id == "b" && i%2 == 0 {
				r.PrefixCacheHits, r.CacheHitAfterReset = record.Int(16), true
			}
			reqs = append(reqs, r)
		}
	}
	configs := []experiment.Config{{ID: "a", Index: 0, Label: "A"}, {ID: "b", Index: 1, Label: "B"}}
	const want = "2 of 4 measured requests hit the prefix cache after it was reset: the reset did not take"
	for _, row := range Summarize(configs, reqs) {
		has := false
		for _, w := range row.Warnings {
			has = has || w == want
		}
		if has != (row.ConfigID == "b") {
			t.Errorf("config %s %s: warnings %q", row.ConfigID, row.Metric, row.Warnings)
		}
	}
}

func TestGPUWarnings(t *testing.T) {
	req := func(clock float64, throttled bool) *record.Request {
		return &record.Request{GPUSMClockMeanMHz: &clock, GPUThrottled: &throttled}
	}
	tests := []struct {
		name string
		reqs []*record.Request
		want []string
	}{
		{"no telemetry", []*record.Request{{}, {}}, nil},
		{"steady", []*record.Request{req(1980, false), req(1965, false), req(1980, false)}, nil},
		{"throttled", []*record.Request{req(1980, false), req(1410, true), req(1980, false)}, []string{
			"1 of 3 measured requests overlapped GPU power or thermal throttling (telemetry.csv names the reasons): their latencies are not those of the GPU at full clocks",
			"the GPU's SM clock varied by 28.8% over the measured requests (1410 to 1980 MHz, mean per request), more than 3%: throttling lowered it, so the latencies mix clock states"}},
		{"clocks spread without throttling", []*record.Request{req(1980, false), req(1700, false), req(1980, false)}, []string{
			"the GPU's SM clock varied by 14.1% over the measured requests (1700 to 1980 MHz, mean per request), more than 3%: boost and power management changed the clock between requests, so the latencies mix clock states"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := gpuWarnings(tc.reqs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestSummarizeServerTimings checks that server_ttft_ms and client_overhead_ms are summarised,
// after every other metric, for a config whose successful measured requests have them: over
// those requests, a missing value counted and named. A config whose measured requests have
// none (a server without /metrics, or a load point, whose cells stay empty) gets no rows for
// them, even when its first request, sent alone, has them.
func TestSummarizeServerTimings(t *testing.T) {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(math.Round(x * 1e6))) }
	timed := func(id string, phase record.Phase, ttft, server float64) record.Request {
		r := loadReq(id, 0, 100, ttft, 5)
		r.Phase, r.ServerTTFT, r.ClientOverhead = phase, ms(server), ms(ttft-server)
		return r
	}
	reqs := []record.Request{
		timed("loaded", record.PhaseFirst, 12, 11),
		timed("alone", record.PhaseWarmup, 90, 80),
		timed("alone", record.PhaseMeasure, 12, 11.5),
		timed("alone", record.PhaseMeasure, 14, 13),
		timed("alone", record.PhaseMeasure, 10, 9.75),
		loadReq("alone", 0, 100, 11, 5), // its scrape failed
	}
	failed := timed("alone", record.PhaseMeasure, 10, 9)
	failed.Status = record.StatusFailed
	reqs = append(reqs, failed)
	for range 3 {
		r := loadReq("loaded", 0, 100, 20, 5)
		r.LoadMode, r.SendLag = record.LoadClosed, ms(0.1)
		reqs = append(reqs, r)
	}
	configs := []experiment.Config{{ID: "alone", Index: 0}, {ID: "loaded", Index: 1, Load: &experiment.LoadSpec{Concurrency: 3}}}
	rows := Summarize(configs, reqs)
	tests := []struct {
		config, metric string
		n, missing     int
		median         float64
		warn           string
	}{
		{"alone", "server_ttft_ms", 3, 1, 11.5, "1 successful requests have no server_ttft_ms"},
		{"alone", "client_overhead_ms", 3, 1, 0.5, "1 successful requests have no client_overhead_ms"},
	}
	for _, tt := range tests {
		i := slices.IndexFunc(rows, func(r SummaryRow) bool { return r.ConfigID == tt.config && r.Metric == tt.metric })
		if i < 0 {
			t.Errorf("no %s row for %s", tt.metric, tt.config)
			continue
		}
		r := rows[i]
		if r.N != tt.n || r.NMissing != tt.missing || r.NFailed != 1 || r.Median != tt.median || !slices.Contains(r.Warnings, tt.warn) {
			t.Errorf("%s %s: n %d missing %d failed %d median %v warnings %q", tt.config, tt.metric, r.N, r.NMissing, r.NFailed, r.Median, r.Warnings)
		}
	}
	var alone, loaded []string
	for _, r := range rows {
		if r.ConfigID == "alone" {
			alone = append(alone, r.Metric)
		} else {
			loaded = append(loaded, r.Metric)
		}
	}
	if n := len(alone); n < 2 || alone[n-2] != "server_ttft_ms" || alone[n-1] != "client_overhead_ms" {
		t.Errorf("metrics of the config sent alone: %v", alone)
	}
	if slices.Contains(loaded, "server_ttft_ms") || slices.Contains(loaded, "client_overhead_ms") {
		t.Errorf("the load point, whose measured requests have no server timings, has rows %v", loaded)
	}
}
