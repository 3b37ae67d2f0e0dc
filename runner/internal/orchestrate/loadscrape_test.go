package orchestrate

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// startNow makes every scrape from now on fail as f.kind says.
func (f *metricsFault) startNow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = f.n
}

// loadScrapeRun runs the experiment against url into a new folder with the subscribers more
// after the folder's, closes the folder as the run ended, and returns it with what the
// progress display printed.
func loadScrapeRun(t *testing.T, ctx context.Context, e *experiment.Experiment, cfgs []experiment.Config, more ...Subscriber) (string, string, Outcome, error) {
	t.Helper()
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	subs := append([]Subscriber{Record(f), NewProgress(&progress, false)}, more...)
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: subs})
	status := results.StatusComplete
	if err != nil {
		status = results.StatusInterrupted
	}
	if cerr := f.Close(status); cerr != nil {
		t.Fatal(cerr)
	}
	return f.Dir(), progress.String(), out, err
}

// TestLoadPointServerTimings runs a closed loop of 4 against the simulator with the scrape
// tests' latency model. Without batching, each request keeps the single-stream timing, so the
// load point's means are the model's: prefill is 40 prompt tokens × 300 µs and decode 5 tokens
// × 500 µs for every request, exact from the histogram sums (delays are whole microseconds;
// the mean of ten float sums is exact to well under a microsecond). The server counts the
// two warm-ups with the eight measured requests, since they run in the same block. Queue and
// TTFT also hold the time the simulator's goroutines took to wake up. The client overhead is
// the client's mean TTFT over the same ten requests minus the server's: small and positive.
// The requests' own server cells stay empty under load, the first request's (sent alone) are
// filled, and load.csv carries the load point's figures.
func TestLoadPointServerTimings(t *testing.T) {
	url := startScrapeSim(t, nil)
	e, cfgs := loadExperiment(t, url, "load:\n  concurrency: 4\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, progress, out, err := loadScrapeRun(t, ctx, e, cfgs)
	if err != nil || out.Sent != 11 || out.Failed != 0 {
		t.Fatalf("outcome %+v, %v\n%s", out, err, progress)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := r.LoadServer()
	if err != nil || len(rows) != 1 {
		t.Fatalf("load_server.csv: %+v, %v", rows, err)
	}
	s := rows[0]
	const exact, slack = time.Microsecond, 50 * time.Millisecond
	near := func(got *time.Duration, want, tol time.Duration) bool {
		return got != nil && *got >= want-exact && *got <= want+tol
	}
	prefill, decode := 40*simPrefill, 5*simDecode
	if s.ConfigID != cfgs[0].ID || s.Requests == nil || *s.Requests != 10 {
		t.Errorf("config %s, server requests %v, want 2 warm-ups + 8 measured", s.ConfigID, s.Requests)
	}
	if !near(s.PrefillMean, prefill, exact) || !near(s.DecodeMean, decode, exact) {
		t.Errorf("prefill mean %v, decode mean %v, want %v and %v", s.PrefillMean, s.DecodeMean, prefill, decode)
	}
	if !near(s.QueueMean, simQueue, slack) || s.QueueMean != nil && !near(s.TTFTMean, *s.QueueMean+prefill, slack) {
		t.Errorf("queue mean %v, ttft mean %v, want %v and queue + %v", s.QueueMean, s.TTFTMean, simQueue, prefill)
	}
	// The decode is timed from the first token's planned time, not from when its event went
	// out: end-to-end is the model's whole request, and at least the TTFT.
	if s.QueueMean != nil && s.TTFTMean != nil && (!near(s.E2EMean, *s.QueueMean+prefill+decode, slack) || *s.E2EMean < *s.TTFTMean) {
		t.Errorf("e2e mean %v, want queue mean %v + prefill %v + decode %v, and at least the ttft mean %v", s.E2EMean, s.QueueMean, prefill, decode, s.TTFTMean)
	}
	if s.PromptTokens == nil || *s.PromptTokens != 400 || s.GenerationTokens == nil || *s.GenerationTokens != 60 {
		t.Errorf("prompt tokens %v, generation tokens %v, want 400 and 60", s.PromptTokens, s.GenerationTokens)
	}
	if s.CacheQueries == nil || *s.CacheQueries != 400 || s.CacheHits == nil || *s.CacheHits != 0 {
		t.Errorf("prefix cache queries %v, hits %v: distinct prompts after a reset hit nothing", s.CacheQueries, s.CacheHits)
	}
	if s.ClientOverheadMean == nil || *s.ClientOverheadMean <= 0 || *s.ClientOverheadMean > slack {
		t.Errorf("client overhead mean %v", s.ClientOverheadMean)
	}
	if !s.Before.Before(s.After) {
		t.Errorf("scrapes at %v and %v", s.Before, s.After)
	}

	reqs, err := results.ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var clientTTFT time.Duration
	for _, q := range reqs {
		alone := q.Phase == record.PhaseFirst
		if (q.ServerTTFT != nil) != alone || (q.ClientOverhead != nil) != alone {
			t.Errorf("%s (%s): server ttft %v, client overhead %v", results.RequestID(q.ConfigID, q.Seq), q.Phase, q.ServerTTFT, q.ClientOverhead)
		}
		if !alone {
			clientTTFT += *q.TTFT
		}
	}
	if want := clientTTFT/10 - *s.TTFTMean; *s.ClientOverheadMean != want {
		t.Errorf("client overhead mean %v, want the mean client ttft %v minus the server's %v", *s.ClientOverheadMean, clientTTFT/10, *s.TTFTMean)
	}
	load, err := r.StoredLoad()
	if err != nil || len(load) != 1 || !reflect.DeepEqual(load[0].Server, s.LoadServer) {
		t.Errorf("load.csv server figures %+v, %v; want %+v", load, err, s.LoadServer)
	}
	sum, err := r.StoredSummary()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range sum {
		if row.Metric == "server_ttft_ms" || row.Metric == "client_overhead_ms" {
			t.Errorf("summary.csv has a %s row for a load point, whose measured requests have no server cells", row.Metric)
		}
	}
}

// TestLoadPointScrapeFails breaks /metrics just as the second of two load points ends: its
// scrape after fails, so it has no server figures (empty cells in load.csv), the first keeps
// its own, no request row is lost, and the run warns once.
func TestLoadPointScrapeFails(t *testing.T) {
	defer func(d time.Duration) { scrapeTimeout = d }(scrapeTimeout)
	scrapeTimeout = 200 * time.Millisecond
	for _, kind := range []string{"garbage", "hang", "404"} {
		t.Run(kind, func(t *testing.T) {
			fault := &metricsFault{kind: kind, after: 1 << 30}
			url := startScrapeSim(t, fault)
			e, cfgs := loadExperiment(t, url, "matrix:\n  load.concurrency: [1, 4]\n")
			// The load point's last row is recorded after its server row: the fault
			// starts with the row before it, when no scrape but the one after is left.
			measured := 0
			breaker := SubscriberFunc(func(ev Event) error {
				if m, ok := ev.(RequestMeasured); ok && m.Config.ID == cfgs[1].ID {
					if measured++; measured == configRequests(cfgs[1])-1 {
						fault.startNow()
					}
				}
				return nil
			})
			var note string
			notes := SubscriberFunc(func(ev Event) error {
				if e, ok := ev.(ServerEnded); ok {
					note = e.Server.ServerMetrics
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir, progress, out, err := loadScrapeRun(t, ctx, e, cfgs, breaker, notes)
			if err != nil || out.Sent != 21 || out.Failed != 0 {
				t.Fatalf("outcome %+v, %v\n%s", out, err, progress)
			}
			if n := strings.Count(progress, "its /metrics failed"); n != 1 {
				t.Errorf("%d warnings about /metrics, want 1:\n%s", n, progress)
			}
			if !strings.Contains(note, "of GET /metrics failed (the first: ") {
				t.Errorf("server note %q", note)
			}
			reqs, err := results.ReadRequests(dir)
			if err != nil || len(reqs) != 21 {
				t.Fatalf("%d rows, %v", len(reqs), err)
			}
			r, err := results.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := r.LoadServer()
			if err != nil || len(rows) != 1 || rows[0].ConfigID != cfgs[0].ID || rows[0].Requests == nil || *rows[0].Requests != 10 {
				t.Fatalf("load_server.csv: %+v, %v; want the first load point's only", rows, err)
			}
			load, err := r.StoredLoad()
			if err != nil || len(load) != 2 || load[0].Server.TTFTMean == nil || !reflect.DeepEqual(load[1].Server, results.LoadServer{}) {
				t.Errorf("load.csv: %+v, %v; want figures for the first load point and empty cells for the second", load, err)
			}
		})
	}
}

// TestLoadPointResumeScrapesOnce interrupts the second of two load points part way, then
// resumes the folder as runner run --resume does: the cut-short load point's rows are
// discarded and it runs again whole, and load_server.csv ends with one row per load point,
// the first from the first run and the second from the rerun.
func TestLoadPointResumeScrapesOnce(t *testing.T) {
	url := startScrapeSim(t, nil)
	e, cfgs := loadExperiment(t, url, "matrix:\n  load.concurrency: [1, 4]\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	seen := 0
	stopper := SubscriberFunc(func(ev Event) error {
		if m, ok := ev.(RequestMeasured); ok && m.Config.ID == cfgs[1].ID {
			if seen++; seen == 3 {
				interrupt()
			}
		}
		return nil
	})
	dir, progress, _, err := loadScrapeRun(t, runCtx, e, cfgs, stopper)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want it interrupted\n%s", err, progress)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.LoadServer()
	if err != nil || len(first) != 1 || first[0].ConfigID != cfgs[0].ID {
		t.Fatalf("load_server.csv after the interrupt: %+v, %v; want the first load point's only", first, err)
	}

	f, done, err := results.Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	partial := PartialLoadPoints(cfgs, done)
	if len(partial) != 1 || partial[0] != cfgs[1].ID {
		t.Fatalf("partial load points %v, want the second", partial)
	}
	if done, err = f.Discard(partial, "load point interrupted part way"); err != nil {
		t.Fatal(err)
	}
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}, Done: done})
	if err != nil || out.Failed != 0 || out.Sent != 10 {
		t.Fatalf("resumed run: %+v, %v", out, err)
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	if r, err = results.Open(dir); err != nil {
		t.Fatal(err)
	}
	rows, err := r.LoadServer()
	if err != nil || len(rows) != 2 || !reflect.DeepEqual(rows[0], first[0]) || rows[1].ConfigID != cfgs[1].ID || rows[1].Requests == nil || *rows[1].Requests != 10 {
		t.Fatalf("load_server.csv after the resume: %+v, %v", rows, err)
	}
	load, err := r.StoredLoad()
	if err != nil || len(load) != 2 || !reflect.DeepEqual(load[1].Server, rows[1].LoadServer) || load[1].Measured != 8 {
		t.Errorf("load.csv after the resume: %+v, %v", load, err)
	}
}
