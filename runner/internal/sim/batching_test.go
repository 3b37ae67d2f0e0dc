package sim

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// planned is what the engine planned for one request, as traceSeq reports it.
type planned struct {
	start   time.Time
	queue   time.Duration
	tokenAt []time.Duration
	events  []genEvent
	p       *plan
}

// traceAll records every request the engine finishes, by response id.
func traceAll(s *Server) (get func() map[string]planned) {
	var mu sync.Mutex
	m := map[string]planned{}
	s.traceSeq = func(q *seq) {
		mu.Lock()
		defer mu.Unlock()
		m[q.id] = planned{start: q.start, queue: q.p.queue, tokenAt: slices.Clone(q.p.tokenAt), events: q.p.events, p: q.p}
	}
	return func() map[string]planned {
		mu.Lock()
		defer mu.Unlock()
		return m
	}
}

// TestBatchingStreams sends 16 concurrent streams to a server with max-num-seqs 4 over HTTP, and
// checks from the server's side that at most 4 ran, that the queue is first in, first out, that
// a waiting request's wait is in its TTFT, that every stamp describes its event and never comes
// before the event's planned time, and that the histograms observe the engine's timings.
func TestBatchingStreams(t *testing.T) {
	const (
		decode = 10 * ms
		perSeq = 2 * ms
		tokens = 8
		n      = 16
	)
	s, ts := startServer(t, func(c *Config) {
		c.Now = nil
		c.MaxNumSeqs = 4
		c.PrefillPerToken = 20 * us
		c.DecodePerToken = decode
		c.DecodePerSeq = perSeq
		c.TokensPerEvent = []int{1, 2}
	})
	traces := traceAll(s)
	type result struct {
		sent time.Time
		evs  []sseEvent
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":"the sun %d","max_tokens":%d,"stream":true}`, i, tokens)
			results[i].sent, results[i].evs = streamTimed(t, ts.URL+"/v1/completions", body, map[string]string{"X-Sim-Stamp": "1"})
		})
	}
	wg.Wait()

	st := s.Stats()
	if st.PeakRunning != 4 || st.PeakInFlight > n || st.Running != 0 || st.Waiting != 0 || st.InFlight != 0 {
		t.Errorf("stats %+v: want peak running 4, peak in flight at most %d, nothing left", st, n)
	}
	tr := traces()
	var admitted []time.Time
	var decodeSum time.Duration
	for i, res := range results {
		if len(res.evs) == 0 {
			t.Fatalf("request %d: no events", i)
		}
		pl, ok := tr[res.evs[0].chunk.ID]
		if !ok {
			t.Fatalf("request %d (%s): the engine did not trace it", i, res.evs[0].chunk.ID)
		}
		if len(res.evs) != len(pl.events) {
			t.Fatalf("request %d: %d events, planned %d", i, len(res.evs), len(pl.events))
		}
		admitted = append(admitted, pl.start.Add(pl.queue))
		decodeSum += pl.tokenAt[tokens-1] - pl.tokenAt[0]
		// The wait for a place in the batch is in the TTFT the client sees.
		if ttft := res.evs[0].at.Sub(res.sent); ttft < pl.tokenAt[0] || pl.tokenAt[0] < pl.queue {
			t.Errorf("request %d: client TTFT %v, planned first token %v, admitted %v after arrival", i, ttft, pl.tokenAt[0], pl.queue)
		}
		for j, e := range res.evs {
			st, ev := e.chunk.Sim, &pl.events[j]
			if st == nil {
				t.Fatalf("request %d, event %d: no stamp", i, j)
			}
			if st.Event != j || st.Tokens != len(ev.ids) || st.CompletionTokens != ev.tokens {
				t.Errorf("request %d, event %d: stamp %+v, planned %d new tokens, %d in all", i, j, *st, len(ev.ids), ev.tokens)
			}
			due := pl.start.Add(pl.p.eventAt(ev)).UnixNano()
			if st.SentNS < due || st.SentNS > e.at.UnixNano() {
				t.Errorf("request %d, event %d: stamped %d, outside [planned %d, client receive %d]", i, j, st.SentNS, due, e.at.UnixNano())
			}
		}
	}
	// First in, first out: the engine takes arrival times in the order it receives requests.
	byArrival := make([]planned, 0, n)
	for _, pl := range tr {
		byArrival = append(byArrival, pl)
	}
	slices.SortFunc(byArrival, func(a, b planned) int { return a.start.Compare(b.start) })
	for i := 1; i < len(byArrival); i++ {
		a, b := byArrival[i-1], byArrival[i]
		if b.start.Add(b.queue).Before(a.start.Add(a.queue)) {
			t.Errorf("the %d-th arrival was admitted before the one that arrived before it", i)
		}
	}
	// With 4 places, the k-th admission waits for k-3 requests to finish, each at least 7
	// decode steps after its own admission.
	slices.SortFunc(admitted, time.Time.Compare)
	for k := 4; k < n; k++ {
		if wait := admitted[k].Sub(admitted[k-4]); wait < (tokens-1)*decode {
			t.Errorf("admission %d came %v after admission %d, before any of those could finish (%v)", k, wait, k-4, (tokens-1)*decode)
		}
	}

	// The histograms observe the engine's times: decode and ITL sums are the planned decode times.
	_, body := get(t, ts, "/metrics")
	samples, _ := parseProm(t, string(body))
	for _, name := range []string{"vllm:request_decode_time_seconds_sum", "vllm:inter_token_latency_seconds_sum"} {
		got := promValue(t, samples, name)
		if math.Abs(got-decodeSum.Seconds()) > 1e-6 {
			t.Errorf("%s is %v, want the planned decode times' sum %v", name, got, decodeSum.Seconds())
		}
	}
	if got := promValue(t, samples, "vllm:time_to_first_token_seconds_count"); got != n {
		t.Errorf("TTFT count %v, want %d", got, n)
	}
}

// promValue returns the value of the one sample called name.
func promValue(t *testing.T, samples []promSample, name string) float64 {
	t.Helper()
	for _, s := range samples {
		if s.name == name {
			return s.value
		}
	}
	t.Fatalf("no sample %s", name)
	return 0
}

// TestBatchingGauges checks that /metrics and Stats report the scheduler's state: with 2 places
// and 5 streams, 2 run and 3 wait; when the clients leave, the engine lets go of all of them and
// serves the next request.
func TestBatchingGauges(t *testing.T) {
	s, ts := startServer(t, func(c *Config) {
		c.Now = nil
		c.MaxNumSeqs = 2
		c.DecodePerToken = 100 * ms // a first batch of 10 tokens holds its state for about a second
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
				strings.NewReader(`{"prompt":"the","max_tokens":10,"stream":true}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 512)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					return
				}
			}
		})
	}
	waitFor(t, func() bool { st := s.Stats(); return st.Running == 2 && st.Waiting == 3 }, "2 running and 3 waiting")
	_, body := get(t, ts, "/metrics")
	samples, _ := parseProm(t, string(body))
	running, waiting := promValue(t, samples, "vllm:num_requests_running"), promValue(t, samples, "vllm:num_requests_waiting")
	if st := s.Stats(); running != float64(st.Running) || waiting != float64(st.Waiting) || st.InFlight != 5 {
		t.Errorf("/metrics says %v running, %v waiting; Stats %+v, want 2, 3 and 5 in flight", running, waiting, st)
	}

	cancel()
	wg.Wait()
	waitFor(t, func() bool { st := s.Stats(); return st.Running == 0 && st.Waiting == 0 && st.InFlight == 0 },
		"the engine to let go of the requests whose clients left")
	_, body = get(t, ts, "/metrics")
	samples, _ = parseProm(t, string(body))
	if r, w := promValue(t, samples, "vllm:num_requests_running"), promValue(t, samples, "vllm:num_requests_waiting"); r != 0 || w != 0 {
		t.Errorf("after the clients left, /metrics says %v running, %v waiting", r, w)
	}
	_, body, err := post(t, ts, "/v1/completions", `{"prompt":"the","max_tokens":1}`, nil)
	if err != nil || !strings.Contains(string(body), `"finish_reason":"length"`) {
		t.Errorf("next request: %v %s", err, body)
	}
	// Requests join at step boundaries, so up to all 5 may have waited at once before the
	// engine's first step.
	if st := s.Stats(); st.PeakRunning != 2 || st.PeakWaiting < 3 || st.PeakWaiting > 5 || st.PeakInFlight != 5 {
		t.Errorf("peaks %+v, want 2 running, 3 to 5 waiting and 5 in flight", st)
	}
	s.ResetPeaks()
	if st := s.Stats(); st.PeakRunning != 0 || st.PeakWaiting != 0 || st.PeakInFlight != 0 {
		t.Errorf("after ResetPeaks, peaks %+v, want 0", st)
	}
}
