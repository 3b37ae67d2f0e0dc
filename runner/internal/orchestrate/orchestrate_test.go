package orchestrate

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/redact"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// endpointExperiment returns an experiment that measures the simulator at url (engine:
// endpoint, so nothing is booted), with two configs.
func endpointExperiment(t *testing.T, url, cache, order string) (*experiment.Experiment, []experiment.Config) {
	t.Helper()
	src := fmt.Sprintf(`version: 1
name: orch
server:
  engine: endpoint
  url: %s
  model: sim-model
request:
  api: completions
  prompt_tokens: 24
  ignore_eos: true
matrix:
  request.max_tokens: [4, 8]
warmup: 1
repetitions: 3
cache: %s
order:
  mode: %s
`, url, cache, order)
	e, err := experiment.Parse(filepath.Join(t.TempDir(), "orch.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return e, cfgs
}

func startSim(t *testing.T, devMode bool) string {
	t.Helper()
	url, _ := startCountingSim(t, devMode)
	return url
}

// startCountingSim starts the simulator and counts the streaming requests it receives.
func startCountingSim(t *testing.T, devMode bool) (string, *atomic.Int64) {
	t.Helper()
	c := sim.DefaultConfig()
	c.Model = "sim-model"
	c.DevMode = devMode
	c.DecodePerToken = 100 * time.Microsecond
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions" {
			n.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts.URL, &n
}

func TestRunOrder(t *testing.T) {
	url := startSim(t, true)
	e, cfgs := endpointExperiment(t, url, "reset", "interleaved")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f), NewProgress(&progress, false)}})
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
	var got []string
	for _, r := range reqs {
		cfg := 0
		if r.ConfigID == cfgs[1].ID {
			cfg = 1
		}
		got = append(got, fmt.Sprintf("c%d:%s%d", cfg, r.Phase, r.Rep))
		if r.Status != record.StatusOK || !r.CacheReset || *r.PromptTokensReported != 24 {
			t.Errorf("%s-%d: %s %s %s, cache reset %v, prompt tokens %v", r.ConfigID, r.Seq, r.Status, r.ErrorClass, r.Error, r.CacheReset, r.PromptTokensReported)
		}
	}
	want := "c0:first0 c0:warmup0 c1:warmup0 c0:measure0 c1:measure0 c0:measure1 c1:measure1 c0:measure2 c1:measure2"
	if strings.Join(got, " ") != want {
		t.Errorf("order\n  %s\nwant\n  %s", strings.Join(got, " "), want)
	}
	if !strings.Contains(progress.String(), "[9/9]") {
		t.Errorf("progress lacks the last request:\n%s", progress.String())
	}
}

// TestRunResumeSkipsDone checks that requests a folder already holds are not sent again, and
// that the new server is warmed as a fresh one would be before it is measured.
func TestRunResumeSkipsDone(t *testing.T) {
	url, received := startCountingSim(t, false)
	e, cfgs := endpointExperiment(t, url, "keep", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The first config's first three requests are already there.
	for seq := range 3 {
		rec := record.Request{ConfigID: cfgs[0].ID, ServerID: cfgs[0].ServerID, Seq: seq, Status: record.StatusOK,
			Start: time.Now().UTC(), Phase: record.PhaseMeasure}
		if err := f.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}, Done: f.Done()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Skipped != 3 || out.Sent != 6 {
		t.Fatalf("outcome %+v, want 3 skipped and 6 sent", out)
	}
	// The folder held the first request and the first config's warm-up; the new server gets
	// both again, unrecorded, before the first config's remaining repetitions.
	if got := received.Load(); got != 6+2 {
		t.Errorf("the server received %d streaming requests, want 6 recorded + 2 to warm it", got)
	}
	if f.Done().Len() != 9 {
		t.Errorf("%d requests recorded, want 9", f.Done().Len())
	}
}

// TestRunCacheResetUnavailable checks that cache: reset on a server that cannot reset fails the
// configs with a message that says what to change, instead of measuring with a warm cache.
func TestRunCacheResetUnavailable(t *testing.T) {
	url := startSim(t, false) // no dev mode: no /reset_prefix_cache
	e, cfgs := endpointExperiment(t, url, "reset", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sent != 9 || out.Failed != 9 {
		t.Fatalf("outcome %+v, want all 9 failed", out)
	}
	f.Close(results.StatusComplete)
	reqs, _ := results.ReadRequests(f.Dir())
	for _, r := range reqs {
		if r.ErrorClass != record.ErrServer || !strings.Contains(r.Error, "set cache: keep") {
			t.Errorf("%s-%d: %s %q", r.ConfigID, r.Seq, r.ErrorClass, r.Error)
		}
	}
}

// TestRunInterrupted checks that a cancelled run stops, says so, and records no partial request.
func TestRunInterrupted(t *testing.T) {
	url := startSim(t, false)
	e, cfgs := endpointExperiment(t, url, "keep", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
	if err == nil || !out.Interrupted || out.Sent != 0 {
		t.Fatalf("outcome %+v, err %v; want interrupted before sending", out, err)
	}
}

// TestRunInterruptedDuringBoot stops a run while its server is not ready yet: the folder records
// that boot, as it records every other, and no request.
func TestRunInterruptedDuringBoot(t *testing.T) {
	ts := httptest.NewServer(nil) // answers 404 to the readiness path: never ready
	defer ts.Close()
	e, cfgs := endpointExperiment(t, ts.URL, "keep", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
	if err == nil || !out.Interrupted || out.Sent != 0 || out.BootFailed != 0 {
		t.Fatalf("outcome %+v, err %v; want interrupted during boot", out, err)
	}
	if err := f.Close(results.StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	man, err := results.ReadManifest(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Servers) != 1 || man.Servers[0].BootSeconds != nil || !strings.Contains(man.Servers[0].Error, "interrupted") {
		t.Errorf("servers %+v, want the one boot, never ready, interrupted", man.Servers)
	}
}

// TestRunBootFailureRecordsArgv boots a server that exits before it is ready: the folder still
// records the command line it was started with, its secrets redacted.
func TestRunBootFailureRecordsArgv(t *testing.T) {
	const secret = "sk-boot-secret-0123"
	src := `version: 1
name: orch
server:
  engine: command
  model: m
  command: [sh, -c, "echo loading; exit 3", sh, --port, "{port}", --api-key, ` + secret + `]
request:
  api: completions
  prompt_tokens: 8
  max_tokens: 4
warmup: 0
repetitions: 1
`
	e, err := experiment.Parse(filepath.Join(t.TempDir(), "orch.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}, StopTimeout: 5 * time.Second})
	if err != nil || out.BootFailed != 1 {
		t.Fatalf("outcome %+v, err %v; want one failed boot", out, err)
	}
	if err := f.Close(results.StatusFailed); err != nil {
		t.Fatal(err)
	}
	man, err := results.ReadManifest(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Servers) != 1 {
		t.Fatalf("servers %+v, want one", man.Servers)
	}
	got := strings.Join(man.Servers[0].Argv, " ")
	if want := "sh -c echo loading; exit 3 sh --port "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " --api-key "+redact.Marker) {
		t.Errorf("argv of the failed boot %q, want %q...--api-key %s", got, want, redact.Marker)
	}
	if man.Servers[0].ExitCode == nil || *man.Servers[0].ExitCode != 3 {
		t.Errorf("exit code %v, want 3", man.Servers[0].ExitCode)
	}
}

// fakeProcess is a server process for goingDown.
type fakeProcess struct {
	done chan struct{}
	pid  int
	url  string
}

func (f *fakeProcess) Exited() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}
func (f *fakeProcess) Done() <-chan struct{} { return f.done }
func (f *fakeProcess) PID() int              { return f.pid }
func (f *fakeProcess) BaseURL() string       { return f.url }

// TestGoingDown checks when a failed request waits for the server's exit: only while the
// server does not answer, never for a live server or one without a process, and never past
// the run being stopped. The wait is made an hour long, so a wait that should not happen
// shows as a call that does not return.
func TestGoingDown(t *testing.T) {
	defer func(w time.Duration) { exitWait = w }(exitWait)
	exitWait = time.Hour

	alive := httptest.NewServer(http.NotFoundHandler())
	defer alive.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()

	tests := []struct {
		name   string
		ctx    context.Context
		pid    int
		url    string
		exited bool // the process has exited before the call
		exits  bool // the process exits during the call
		stop   bool // the run is stopped during the call
		want   bool
	}{
		{"exited", bg, 42, refused, true, false, false, true},
		{"no process (engine: endpoint)", bg, 0, refused, false, false, false, false},
		{"answers", bg, 42, alive.URL, false, false, false, false},
		{"refuses connections, then exits", bg, 42, refused, false, true, false, true},
		{"refuses connections, run stopped before", canceled, 42, refused, false, false, false, false},
		{"refuses connections, run stopped while waiting", bg, 42, refused, false, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProcess{done: make(chan struct{}), pid: tt.pid, url: tt.url}
			if tt.exited {
				close(p.done)
			}
			ctx, stop := context.WithCancel(tt.ctx)
			defer stop()
			got := make(chan bool, 1)
			go func() { got <- goingDown(ctx, p) }()
			if tt.exits {
				close(p.done)
			}
			if tt.stop {
				stop()
			}
			select {
			case g := <-got:
				if g != tt.want {
					t.Errorf("goingDown = %v, want %v", g, tt.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("goingDown waited for an exit it had no reason to wait for")
			}
		})
	}
}

// TestRunCutStreamsNoPause checks that requests whose streams a live server cuts off are
// recorded as truncated and followed at once by the next: nine of them once took nine seconds
// of pauses.
func TestRunCutStreamsNoPause(t *testing.T) {
	faults, err := sim.ParseFaults("abort@1")
	if err != nil {
		t.Fatal(err)
	}
	c := sim.DefaultConfig()
	c.Model = "sim-model"
	c.DecodePerToken = 100 * time.Microsecond
	c.Faults = faults
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	e, cfgs := endpointExperiment(t, ts.URL, "keep", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Subscribers: []Subscriber{Record(f)}})
	if err != nil {
		t.Fatal(err)
	}
	// A fixed pause of a second per failure makes this at least 9 s; the requests themselves
	// take milliseconds, so even a machine that stalls for seconds stays far below 8 s.
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("9 cut-off requests took %v", d)
	}
	if out.Sent != 9 || out.Failed != 9 {
		t.Errorf("outcome %+v, want 9 sent, 9 failed", out)
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	reqs, err := results.ReadRequests(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.ErrorClass != record.ErrTruncated {
			t.Errorf("%s-%d: %s %q, want truncated", r.ConfigID, r.Seq, r.ErrorClass, r.Error)
		}
	}
}
