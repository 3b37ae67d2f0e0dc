package orchestrate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// The simulator's latency model in the scrape tests: every delay a whole number of
// microseconds, so that the histogram sums, float seconds, give them back to the nanosecond.
const (
	simQueue   = 2 * time.Millisecond
	simPrefill = 300 * time.Microsecond // per uncached prompt token
	simDecode  = 500 * time.Microsecond // per generated token after the first
)

// metricsFault is what the wrapped simulator's /metrics does: "" serves it, "garbage" answers
// 200 with a page that is no Prometheus text, "hang" never answers, "404" answers 404.
type metricsFault struct {
	mu    sync.Mutex
	after int // scrapes served normally before the fault starts
	kind  string
	once  bool // the fault strikes one scrape, and the later ones are served
	n     int
}

func (f *metricsFault) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n <= f.after || (f.once && f.n > f.after+1) {
		return ""
	}
	return f.kind
}

// startScrapeSim starts the simulator with the model above, its /metrics broken as fault says.
func startScrapeSim(t *testing.T, fault *metricsFault, faults ...sim.Fault) string {
	t.Helper()
	c := sim.DefaultConfig()
	c.Model, c.DevMode = "sim-model", true
	c.QueueDelay, c.PrefillPerToken, c.DecodePerToken = simQueue, simPrefill, simDecode
	c.Faults = faults
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && fault != nil {
			switch fault.next() {
			case "garbage":
				_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>\n"))
				return
			case "hang":
				<-r.Context().Done()
				return
			case "404":
				http.NotFound(w, r)
				return
			}
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts.URL
}

// scrapeRun runs the two-config endpoint experiment against url and returns its rows, what
// the progress display printed, and the server notes of the manifest.
func scrapeRun(t *testing.T, url, cache string) ([]record.Request, string, string) {
	t.Helper()
	e, cfgs := endpointExperiment(t, url, cache, "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	var note string
	notes := SubscriberFunc(func(ev Event) error {
		if e, ok := ev.(ServerEnded); ok {
			note = e.Server.ServerMetrics
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog,
		Subscribers: []Subscriber{Record(f), NewProgress(&progress, false), notes}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sent != 9 || out.Failed != 0 {
		t.Fatalf("outcome %+v\n%s", out, progress.String())
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	reqs, err := results.ReadRequests(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 9 {
		t.Fatalf("%d rows, want 9", len(reqs))
	}
	return reqs, progress.String(), note
}

// TestServerTimingsMatchSimModel: with one request at a time, each row's server-side timings
// are the simulator's own for that request. Prefill and decode are the model's delays exactly
// (the sim has no jitter here; a sum of float seconds is exact to well under a microsecond).
// Queue, TTFT and end-to-end also hold the time the simulator's goroutines took to wake up,
// bounded by slack on a busy machine. Client overhead is what the client adds: positive and
// small.
func TestServerTimingsMatchSimModel(t *testing.T) {
	reqs, progress, note := scrapeRun(t, startScrapeSim(t, nil), "reset")
	if !strings.Contains(note, "vllm names") {
		t.Errorf("server note %q", note)
	}
	if strings.Contains(progress, "/metrics") {
		t.Errorf("progress warns about /metrics:\n%s", progress)
	}
	const exact, slack = time.Microsecond, 50 * time.Millisecond
	near := func(got *time.Duration, want time.Duration, tol time.Duration) bool {
		return got != nil && *got >= want-exact && *got <= want+tol
	}
	for _, r := range reqs {
		id := results.RequestID(r.ConfigID, r.Seq)
		if r.PromptTokensReported == nil || r.ServerPromptTokens == nil || *r.ServerPromptTokens != *r.PromptTokensReported {
			t.Errorf("%s: server prompt tokens %v, usage %v", id, r.ServerPromptTokens, r.PromptTokensReported)
			continue
		}
		prefill := simPrefill * time.Duration(*r.PromptTokensReported)
		decode := simDecode * time.Duration(r.MaxTokens-1)
		if !near(r.ServerPrefill, prefill, exact) || !near(r.ServerDecode, decode, exact) {
			t.Errorf("%s: prefill %v decode %v, want %v %v", id, r.ServerPrefill, r.ServerDecode, prefill, decode)
		}
		if !near(r.ServerQueue, simQueue, slack) {
			t.Errorf("%s: queue %v, want %v", id, r.ServerQueue, simQueue)
		}
		if r.ServerQueue != nil && !near(r.ServerTTFT, *r.ServerQueue+prefill, slack) {
			t.Errorf("%s: server ttft %v, want queue %v + prefill %v", id, r.ServerTTFT, r.ServerQueue, prefill)
		}
		// The decode is timed from the first token's planned time, not from when its event
		// went out: end-to-end is at least the model's whole request, and at least the TTFT.
		if r.ServerQueue != nil && r.ServerTTFT != nil && (!near(r.ServerE2E, *r.ServerQueue+prefill+decode, slack) || *r.ServerE2E < *r.ServerTTFT) {
			t.Errorf("%s: server e2e %v, want queue %v + prefill %v + decode %v, and at least ttft %v", id, r.ServerE2E, r.ServerQueue, prefill, decode, r.ServerTTFT)
		}
		if r.ServerGenerationTokens == nil || *r.ServerGenerationTokens != r.MaxTokens {
			t.Errorf("%s: generation tokens %v, want %d", id, r.ServerGenerationTokens, r.MaxTokens)
		}
		if r.PrefixCacheHits == nil || *r.PrefixCacheHits != 0 || r.PrefixCacheQueries == nil || r.CacheHitAfterReset {
			t.Errorf("%s: cache queries %v hits %v, flagged %v after a reset that took", id, r.PrefixCacheQueries, r.PrefixCacheHits, r.CacheHitAfterReset)
		}
		if r.ClientOverhead == nil || *r.ClientOverhead <= 0 || *r.ClientOverhead > slack || *r.ClientOverhead != *r.TTFT-*r.ServerTTFT {
			t.Errorf("%s: client overhead %v (ttft %v, server %v)", id, r.ClientOverhead, r.TTFT, r.ServerTTFT)
		}
	}
}

// TestBadMetricsLoseNoRows: a /metrics that serves garbage, hangs or disappears mid-run loses
// no request row; the rows from the failure on have empty server cells, the rows before keep
// theirs, and the run warns once for the server.
func TestBadMetricsLoseNoRows(t *testing.T) {
	defer func(d time.Duration) { scrapeTimeout = d }(scrapeTimeout)
	scrapeTimeout = 200 * time.Millisecond
	tests := []struct {
		kind  string
		after int // scrapes that work, two per request (cache: keep: no reset probe reads /metrics)
		want  string
	}{
		{"garbage", 0, "text format parsing error"},
		{"hang", 5, "took longer than 200ms"},
		{"404", 7, "404"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			reqs, progress, note := scrapeRun(t, startScrapeSim(t, &metricsFault{kind: tt.kind, after: tt.after}), "keep")
			if n := strings.Count(progress, "its /metrics failed"); n != 1 || !strings.Contains(progress, tt.want) {
				t.Errorf("%d warnings, want one naming %q:\n%s", n, tt.want, progress)
			}
			if !strings.Contains(note, "of GET /metrics failed (the first: ") {
				t.Errorf("server note %q", note)
			}
			with := 0
			for _, r := range reqs {
				if r.Status != record.StatusOK {
					t.Errorf("%s: %s %s", results.RequestID(r.ConfigID, r.Seq), r.Status, r.Error)
				}
				if r.ServerTTFT != nil {
					with++
				}
			}
			if want := max(tt.after-1, 0) / 2; with != want {
				t.Errorf("%d rows with server timings, want %d", with, want)
			}
		})
	}
}

// TestCacheHitAfterResetFlagged: a reset that answers 200 and keeps the cache (the simulator's
// reset-noop fault) flags every measured row that hit the cache, and the summary warns.
func TestCacheHitAfterResetFlagged(t *testing.T) {
	reqs, _, _ := scrapeRun(t, startScrapeSim(t, nil, sim.Fault{Kind: sim.FaultResetNoop}), "reset")
	flagged := 0
	for _, r := range reqs {
		hit := r.PrefixCacheHits != nil && *r.PrefixCacheHits > 0
		if r.CacheHitAfterReset != hit || !r.CacheReset {
			t.Errorf("%s: hits %v, flagged %v", results.RequestID(r.ConfigID, r.Seq), r.PrefixCacheHits, r.CacheHitAfterReset)
		}
		if r.CacheHitAfterReset && r.Phase == record.PhaseMeasure {
			flagged++
		}
	}
	if flagged != 6 {
		t.Errorf("%d measured rows flagged, want all 6 (the prompt is the same each time)", flagged)
	}
	warned := false
	for _, row := range results.Summarize(nil, reqs) {
		for _, w := range row.Warnings {
			warned = warned || strings.Contains(w, "3 of 3 measured requests hit the prefix cache after it was reset")
		}
	}
	if !warned {
		t.Error("the summary does not warn about the cache")
	}
}

// TestScrapeRetriedAfterFailure: one failed scrape of /metrics does not turn the scraping off
// for the server: the next one, after the backoff (none here), is tried, and the rows after it
// have their server cells again. The failures are counted in the server's note of the manifest,
// and the run warns once.
func TestScrapeRetriedAfterFailure(t *testing.T) {
	defer func(d time.Duration) { scrapeBackoff = d }(scrapeBackoff)
	scrapeBackoff = 0
	// The third scrape (the second request's before) serves garbage; every other one works.
	url := startScrapeSim(t, &metricsFault{kind: "garbage", after: 2, once: true})
	reqs, progress, note := scrapeRun(t, url, "keep")
	if n := strings.Count(progress, "its /metrics failed"); n != 1 {
		t.Errorf("%d warnings, want one:\n%s", n, progress)
	}
	if !strings.Contains(note, "1 scrape of GET /metrics failed") {
		t.Errorf("server note %q does not count the failed scrape", note)
	}
	with := 0
	for _, r := range reqs {
		if r.ServerTTFT != nil {
			with++
		}
	}
	if with != 8 {
		t.Errorf("%d rows with server timings, want 8: all but the one whose scrape failed", with)
	}
}
