package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// loadSim is the simulator behind a handler that counts, from the server's side, the streaming
// requests in flight and keeps every prompt it was sent.
type loadSim struct {
	sim     *sim.Server
	url     string
	now     atomic.Int64
	peak    atomic.Int64
	mu      sync.Mutex
	prompts []string

	// gateFrom and gateAt, when gateAt is above 0, hold the completions from the gateFrom-th
	// (0-based) at the start of their response, inside the simulator and so counted in flight
	// by it, until gateAt of them are held at once; then every one goes on, and later ones
	// pass. A test that wants to see N requests in flight then sees them whatever the
	// machine's load, rather than only when N happen to overlap.
	gateFrom, gateAt int
	atGate           int
	gateOpen         chan struct{}
}

// gateWriter holds a response at its first header or body write, as loadSim's gate says.
type gateWriter struct {
	http.ResponseWriter
	ls     *loadSim
	passed bool
}

func (g *gateWriter) pass() {
	if g.passed {
		return
	}
	g.passed = true
	g.ls.mu.Lock()
	if g.ls.atGate++; g.ls.atGate == g.ls.gateAt {
		close(g.ls.gateOpen)
	}
	g.ls.mu.Unlock()
	// A safety net only: a gate that never fills fails the test's count, not its deadline.
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case <-g.ls.gateOpen:
	case <-t.C:
	}
}

func (g *gateWriter) WriteHeader(code int) { g.pass(); g.ResponseWriter.WriteHeader(code) }

func (g *gateWriter) Write(b []byte) (int, error) { g.pass(); return g.ResponseWriter.Write(b) }

func (g *gateWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func startLoadSim(t *testing.T) *loadSim {
	t.Helper()
	c := sim.DefaultConfig()
	c.Model = "sim-model"
	c.DevMode = true
	c.DecodePerToken = 2 * time.Millisecond
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ls := &loadSim{sim: s, gateOpen: make(chan struct{})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			s.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var v struct{ Prompt string }
		_ = json.Unmarshal(body, &v)
		ls.mu.Lock()
		gated := ls.gateAt > 0 && len(ls.prompts) >= ls.gateFrom
		ls.prompts = append(ls.prompts, v.Prompt)
		ls.mu.Unlock()
		if gated {
			w = &gateWriter{ResponseWriter: w, ls: ls}
		}
		n := ls.now.Add(1)
		for p := ls.peak.Load(); n > p && !ls.peak.CompareAndSwap(p, n); p = ls.peak.Load() {
		}
		defer ls.now.Add(-1)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.Close(); ts.Close() })
	ls.url = ts.URL
	return ls
}

func loadExperiment(t *testing.T, url, load string) (*experiment.Experiment, []experiment.Config) {
	t.Helper()
	src := fmt.Sprintf(`version: 1
name: load
server:
  engine: endpoint
  url: %s
  model: sim-model
request:
  prompt_tokens: 40
  max_tokens: 6
  ignore_eos: true
warmup: 2
repetitions: 8
%s`, url, load)
	e, err := experiment.Parse(filepath.Join(t.TempDir(), "load.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return e, cfgs
}

// TestRunLoadPoints runs a closed-loop sweep through the whole orchestration: each load point
// runs as one block after the first request, the server never sees more requests at once than
// the load allows, the cache is reset once per load point, every prompt is distinct and still
// of the exact length asked for, and every row says how it was sent.
func TestRunLoadPoints(t *testing.T) {
	ls := startLoadSim(t)
	// The first request and concurrency 1's ten go first; concurrency 4's ten are held until
	// four are in flight at once.
	ls.gateFrom, ls.gateAt = 11, 4
	e, cfgs := loadExperiment(t, ls.url, "matrix:\n  load.concurrency: [1, 4]\n")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog,
		Subscribers: []Subscriber{Record(f), NewProgress(&progress, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sent != 21 || out.Failed != 0 {
		t.Fatalf("outcome %+v\n%s", out, progress.String())
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	if p := ls.peak.Load(); p != 4 {
		t.Errorf("the server saw at most %d requests at once, want 4", p)
	}
	if p := ls.sim.Stats().PeakInFlight; p != 4 {
		t.Errorf("the simulator's own count of requests in flight peaked at %d, want 4", p)
	}
	reqs, err := results.ReadRequests(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	resets := map[string]int{}
	for _, r := range reqs {
		c := 0
		if r.ConfigID == cfgs[1].ID {
			c = 1
		}
		order = append(order, fmt.Sprintf("c%d:%s", c, r.Phase))
		if r.Status != record.StatusOK || r.PromptTokensReported == nil || *r.PromptTokensReported != 40 {
			t.Errorf("%s-%d: %s %s, prompt tokens %v", r.ConfigID, r.Seq, r.Status, r.Error, r.PromptTokensReported)
		}
		if r.CacheReset {
			resets[r.ConfigID]++
		}
		if r.Phase == record.PhaseFirst {
			if r.LoadMode != "" || r.Scheduled != nil {
				t.Errorf("the first request has load fields: %+v", r)
			}
			continue
		}
		want := cfgs[c].Load.Concurrency
		if r.LoadMode != record.LoadClosed || r.Concurrency != want || r.InFlight < 1 || r.InFlight > want || r.SendLag == nil || r.Scheduled == nil {
			t.Errorf("%s-%d: load %q concurrency %d in flight %d send lag %v", r.ConfigID, r.Seq, r.LoadMode, r.Concurrency, r.InFlight, r.SendLag)
		}
		if r.Cache != "reset_per_config" {
			t.Errorf("%s-%d: cache %q", r.ConfigID, r.Seq, r.Cache)
		}
	}
	// Rows are appended in completion order; the blocks do not mix.
	got := strings.Join(order, " ")
	block := func(c int) string {
		return strings.TrimSpace(strings.Repeat(fmt.Sprintf("c%d:warmup ", c), 2) + strings.Repeat(fmt.Sprintf("c%d:measure ", c), 8))
	}
	if want := "c0:first " + block(0) + " " + block(1); got != want && !strings.HasPrefix(got, "c0:first c0:") {
		t.Errorf("order\n  %s\nwant the first request, then config 0's block, then config 1's", got)
	}
	if i, j := strings.LastIndex(got, "c0:"), strings.Index(got, "c1:"); i > j {
		t.Errorf("load points overlap: %s", got)
	}
	for _, c := range cfgs {
		if resets[c.ID] != 1 {
			t.Errorf("config %s: %d rows with a cache reset, want 1 per load point", c.Label, resets[c.ID])
		}
	}
	// The first request sends the shared prompt; every request of a load point its own.
	seen := map[string]bool{}
	for _, p := range ls.prompts[1:] {
		if seen[p] {
			t.Errorf("prompt sent twice under load: %.40q", p)
		}
		seen[p] = true
	}
	if len(seen) != 20 {
		t.Errorf("%d distinct prompts, want 20", len(seen))
	}
	if !strings.Contains(progress.String(), "load point concurrency=4: 10 requests, closed loop, 4 in flight") {
		t.Errorf("progress does not announce the load point:\n%s", progress.String())
	}
}

// TestRunOpenLoopCap runs an open loop with a cap against the simulator: the server side never
// sees more than the cap.
func TestRunOpenLoopCap(t *testing.T) {
	ls := startLoadSim(t)
	e, cfgs := loadExperiment(t, ls.url, "cache: keep\nload:\n  rate: 500\n  max_concurrency: 3\n  arrival: constant\n  prompts: shared\n")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
	if err != nil || out.Sent != 11 || out.Failed != 0 {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if p := ls.peak.Load(); p > 3 {
		t.Errorf("the server saw %d requests at once under a cap of 3", p)
	}
	if p := ls.sim.Stats().PeakInFlight; p > 3 || p < 1 {
		t.Errorf("the simulator's own count of requests in flight peaked at %d under a cap of 3", p)
	}
	if len(ls.prompts) != 11 {
		t.Fatalf("%d prompts", len(ls.prompts))
	}
	for _, p := range ls.prompts {
		if p != ls.prompts[0] {
			t.Errorf("prompts: shared sent different prompts")
			break
		}
	}
}

// TestPartialLoadPointRefused checks that a folder holding part of a load point is never
// resumed by adding to it: its rows must be discarded first.
func TestPartialLoadPointRefused(t *testing.T) {
	ls := startLoadSim(t)
	e, cfgs := loadExperiment(t, ls.url, "matrix:\n  load.concurrency: [1, 4]\n")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The first config is whole (the first request, 2 warm-ups, 8 repetitions); the second
	// has 3 of its 10 rows.
	add := func(c experiment.Config, n int) {
		for seq := range n {
			rec := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Status: record.StatusOK, Start: time.Now().UTC(), Phase: record.PhaseMeasure}
			if err := f.Append(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(cfgs[0], 11)
	add(cfgs[1], 3)
	if got := PartialLoadPoints(cfgs, f.Done()); len(got) != 1 || got[0] != cfgs[1].ID {
		t.Fatalf("partial load points %v, want [%s]", got, cfgs[1].ID)
	}
	_, err = Run(context.Background(), Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{Record(f)}, Done: f.Done()})
	if err == nil || !strings.Contains(err.Error(), cfgs[1].ID) {
		t.Fatalf("Run = %v, want a refusal naming %s", err, cfgs[1].ID)
	}
	if len(ls.prompts) != 0 {
		t.Errorf("%d requests sent to a folder that cannot be resumed", len(ls.prompts))
	}
}

// TestRunLoadRefused checks a server that starts refusing connections under load, closed and
// open: when the first request arrives its listener closes, so every new connection is refused
// while the connections already open keep working. Every request is recorded, the failed ones with
// their class, and the run ends by itself.
func TestRunLoadRefused(t *testing.T) {
	for _, load := range []string{"concurrency: 8", "rate: 400\n  max_concurrency: 4"} {
		c := sim.DefaultConfig()
		c.Model = "sim-model"
		s, err := sim.New(c)
		if err != nil {
			t.Fatal(err)
		}
		var ts *httptest.Server
		var once sync.Once
		ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/completions" {
				once.Do(func() { ts.Listener.Close() })
			}
			s.ServeHTTP(w, r)
		}))
		// Every request needs a connection of its own, so that every request sent after the
		// listener closed is refused: at least those beyond the first wave of the load.
		ts.Config.SetKeepAlivesEnabled(false)
		ts.Start()
		e, cfgs := loadExperiment(t, ts.URL, "cache: keep\nload:\n  prompts: shared\n  "+load+"\n")
		f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
		cancel()
		ts.Close()
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		// At most the first wave (8 in flight, or the cap of 4) connected before the close.
		if out.Sent != 11 || out.Failed < 3 {
			t.Fatalf("%s: outcome %+v, want 11 sent, at least 3 failed", load, out)
		}
		reqs, err := results.ReadRequests(f.Dir())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if r.Status != record.StatusOK && r.ErrorClass != record.ErrConnect {
				t.Errorf("%s: %s-%d: %s %s %s", load, r.ConfigID, r.Seq, r.Status, r.ErrorClass, r.Error)
			}
		}
	}
}
