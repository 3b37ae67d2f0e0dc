package measure

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// TestArrivalsMoments checks the generated schedule, not wall time: the gaps of each arrival
// process have mean 1/rate and the coefficient of variation of their distribution (0 for
// constant, 1 for Poisson, 1/sqrt(k) for gamma of shape k). With 40,000 gaps the standard
// error of the mean is below 0.5% of it (CV ≤ 2) and that of the CV below 1.5%, so 5% is more
// than three standard errors; a wrong scale or shape is off by far more.
func TestArrivalsMoments(t *testing.T) {
	tests := []struct {
		arrival    string
		burstiness float64
		cv         float64
	}{
		{ArrivalConstant, 0, 0},
		{ArrivalPoisson, 0, 1},
		{ArrivalGamma, 1, 1},
		{ArrivalGamma, 4, 0.5},
		{ArrivalGamma, 0.25, 2},
	}
	const n, rate = 40000, 8.0
	for _, tt := range tests {
		a := NewArrivals(rate, tt.arrival, tt.burstiness, 42)
		if first := a.Next(); first != 0 {
			t.Errorf("%s: first arrival at %v, want 0", tt.arrival, first)
		}
		prev := 0.0
		var sum, sumsq float64
		for range n {
			at := a.Next().Seconds()
			g := at - prev
			prev = at
			if g < 0 {
				t.Fatalf("%s: negative gap %v", tt.arrival, g)
			}
			sum += g
			sumsq += g * g
		}
		mean := sum / n
		sd := math.Sqrt(max(sumsq/n-mean*mean, 0))
		if math.Abs(mean*rate-1) > 0.05 {
			t.Errorf("%s(%v): mean gap %.5f s, want %.5f", tt.arrival, tt.burstiness, mean, 1/rate)
		}
		cv := sd / mean
		if math.Abs(cv-tt.cv) > 0.05*max(tt.cv, 0.2) {
			t.Errorf("%s(%v): coefficient of variation %.4f, want %.4f", tt.arrival, tt.burstiness, cv, tt.cv)
		}
	}
}

// TestArrivalsSeeded checks that a schedule depends on its seed alone.
func TestArrivalsSeeded(t *testing.T) {
	take := func(seed int64) []time.Duration {
		a := NewArrivals(10, ArrivalGamma, 0.5, seed)
		out := make([]time.Duration, 50)
		for i := range out {
			out[i] = a.Next()
		}
		return out
	}
	a, b, c := take(7), take(7), take(8)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 gave %v then %v at %d", a[i], b[i], i)
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("seeds 7 and 8 gave the same schedule")
	}
}

// countingServer answers every completion with a short stream after hold, and counts the
// requests it is serving at once: the server side of the in-flight checks.
type countingServer struct {
	hold      time.Duration
	now, peak atomic.Int64
	served    atomic.Int64
}

func (s *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	n := s.now.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer s.now.Add(-1)
	s.served.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	for i := range 3 {
		if i == 1 {
			time.Sleep(s.hold)
		}
		io.WriteString(w, `data: {"id":"x","object":"text_completion","choices":[{"index":0,"text":"a","finish_reason":null}]}`+"\n\n")
		f.Flush()
	}
	io.WriteString(w, `data: {"id":"x","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`+"\n\ndata: [DONE]\n\n")
}

func loadClient(t *testing.T, h http.Handler) *Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &Client{API: &openai.Client{BaseURL: ts.URL}}
}

func loadSpec(context.Context, int) (Spec, error) {
	return Spec{Params: openai.Params{API: openai.Completions, Model: "m", Prompt: "p", MaxTokens: 3,
		Options: openai.Options{IncludeUsage: true}}, Timeout: 10 * time.Second}, nil
}

// collect runs a load point and returns its results by index.
func collect(t *testing.T, c *Client, l Load, n int) []LoadResult {
	t.Helper()
	got := make([]LoadResult, n)
	seen := 0
	err := RunLoad(context.Background(), c, l, n, loadSpec, func(r LoadResult) error {
		if got[r.Index].Record.Status != "" || got[r.Index].Err != nil {
			t.Errorf("request %d handed on twice", r.Index)
		}
		got[r.Index] = r
		seen++
		return nil
	})
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if seen != n {
		t.Fatalf("%d results, want %d", seen, n)
	}
	for i, r := range got {
		if r.Err != nil || r.Record.Status != record.StatusOK {
			t.Fatalf("request %d: %v %s %s", i, r.Err, r.Record.ErrorClass, r.Record.Error)
		}
	}
	return got
}

// TestClosedLoopInFlight checks, from the server's side, that a closed loop of N never has
// more than N requests in flight and does keep N in flight, and that each row says so.
func TestClosedLoopInFlight(t *testing.T) {
	srv := &countingServer{hold: 20 * time.Millisecond}
	c := loadClient(t, srv)
	got := collect(t, c, Load{Concurrency: 4}, 24)
	if p := srv.peak.Load(); p != 4 {
		t.Errorf("server saw %d requests at once, want 4", p)
	}
	if s := srv.served.Load(); s != 24 {
		t.Errorf("server served %d requests, want 24", s)
	}
	most := 0
	for i, r := range got {
		rec := r.Record
		if rec.LoadMode != record.LoadClosed || rec.Concurrency != 4 || rec.Rate != 0 {
			t.Errorf("request %d: load %q concurrency %d rate %v", i, rec.LoadMode, rec.Concurrency, rec.Rate)
		}
		if rec.InFlight < 1 || rec.InFlight > 4 {
			t.Errorf("request %d: in flight %d, want 1..4", i, rec.InFlight)
		}
		most = max(most, rec.InFlight)
		if rec.Scheduled == nil || rec.SendLag == nil || *rec.SendLag < 0 {
			t.Errorf("request %d: scheduled %v send lag %v", i, rec.Scheduled, rec.SendLag)
		}
		if rec.CapWait != nil {
			t.Errorf("request %d: a closed loop recorded a cap wait", i)
		}
	}
	if most != 4 {
		t.Errorf("most in flight by the rows %d, want 4", most)
	}
}

// TestOpenLoopCap checks an open loop with a cap: the server never sees more than the cap, the
// requests are sent in arrival order from their scheduled moments, and the ones that waited for
// a slot record the wait inside their send lag.
func TestOpenLoopCap(t *testing.T) {
	srv := &countingServer{hold: 30 * time.Millisecond}
	c := loadClient(t, srv)
	l := Load{Rate: 400, Arrival: ArrivalConstant, MaxConcurrency: 2}
	got := collect(t, c, l, 12)
	if p := srv.peak.Load(); p > 2 {
		t.Errorf("server saw %d requests at once under a cap of 2", p)
	}
	waited := 0
	for i, r := range got {
		rec := r.Record
		want := time.Duration(float64(i) / l.Rate * float64(time.Second))
		if rec.Scheduled == nil || *rec.Scheduled != want {
			t.Errorf("request %d scheduled at %v, want %v", i, rec.Scheduled, want)
		}
		if rec.LoadMode != record.LoadOpen || rec.Rate != 400 || rec.Concurrency != 2 {
			t.Errorf("request %d: load %q rate %v cap %d", i, rec.LoadMode, rec.Rate, rec.Concurrency)
		}
		if rec.CapWait == nil || rec.SendLag == nil || *rec.CapWait > *rec.SendLag {
			t.Fatalf("request %d: cap wait %v, send lag %v", i, rec.CapWait, rec.SendLag)
		}
		if *rec.CapWait > 5*time.Millisecond {
			waited++
		}
		if rec.InFlight > 2 {
			t.Errorf("request %d: %d in flight under a cap of 2", i, rec.InFlight)
		}
	}
	// Arrivals every 2.5 ms against requests that take 30 ms and two slots: most must wait.
	if waited < len(got)/2 {
		t.Errorf("%d of %d requests waited for a slot, want most", waited, len(got))
	}
}

// TestRunLoadStops checks both ways a load point stops early: done refusing a result (no
// further request is sent, and RunLoad returns done's error), and ctx ending.
func TestRunLoadStops(t *testing.T) {
	// What is checked is what the load point starts once it is told to stop: the calls of
	// prepare, which comes before every send, made with the load point's context already
	// ended. Never how many requests a busy machine finishes in the meantime.
	srv := &countingServer{hold: 5 * time.Millisecond}
	c := loadClient(t, srv)
	var prepared, late atomic.Int64
	counted := func(ctx context.Context, i int) (Spec, error) {
		prepared.Add(1)
		if ctx.Err() != nil {
			late.Add(1)
		}
		return loadSpec(ctx, i)
	}
	boom := errors.New("disk full")
	calls := 0
	err := RunLoad(context.Background(), c, Load{Concurrency: 2}, 1000, counted, func(LoadResult) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RunLoad = %v, want the error done returned", err)
	}
	if calls != 3 {
		t.Errorf("done called %d times, want 3: none after its error", calls)
	}
	// Each of the two slots may have passed its check of the stop just before it came.
	if l := late.Load(); l > 2 {
		t.Errorf("%d requests prepared after the load point stopped at the third result", l)
	}

	ctx, cancel := context.WithCancel(context.Background())
	prepared.Store(0)
	late.Store(0)
	var mu sync.Mutex
	n := 0
	err = RunLoad(ctx, c, Load{Rate: 1000, Arrival: ArrivalPoisson}, 100000, counted, func(LoadResult) error {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunLoad after cancel = %v, want context.Canceled", err)
	}
	// The dispatcher may have passed its check of the context just before the cancel.
	if l := late.Load(); l > 1 {
		t.Errorf("%d requests prepared after a cancel at the fifth result", l)
	}
	if p := prepared.Load(); int64(n) > p {
		t.Errorf("%d results for %d requests prepared", n, p)
	}
}

// TestLoadValidate checks the settings RunLoad refuses.
func TestLoadValidate(t *testing.T) {
	bad := []Load{
		{},
		{Concurrency: -1},
		{Rate: math.Inf(1), Arrival: ArrivalPoisson},
		{Rate: 1, Arrival: "burst"},
		{Rate: 1, Arrival: ArrivalGamma},
		{Rate: 1, Arrival: ArrivalPoisson, MaxConcurrency: -2},
	}
	for _, l := range bad {
		if l.Validate() == nil {
			t.Errorf("%+v validated", l)
		}
		if err := RunLoad(context.Background(), &Client{}, l, 1, loadSpec, func(LoadResult) error { return nil }); err == nil {
			t.Errorf("RunLoad ran %+v", l)
		}
	}
	good := []Load{{Concurrency: 1}, {Rate: 0.5, Arrival: ArrivalConstant}, {Rate: 3, Arrival: ArrivalGamma, Burstiness: 0.1, MaxConcurrency: 4}}
	for _, l := range good {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
}
