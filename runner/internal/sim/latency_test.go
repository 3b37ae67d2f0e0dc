package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const ms = time.Millisecond

func mustServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	c := testConfig()
	if mutate != nil {
		mutate(&c)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanTiming checks the latency model without a clock: token k is ready at
// queue + prefill·uncached + decode·k, and an event goes out with its last token.
func TestPlanTiming(t *testing.T) {
	cases := []struct {
		name      string
		cfg       func(*Config)
		in        planInput
		wantAt    []time.Duration
		wantCount []int // new tokens per event
	}{
		{
			name:      "one token per event",
			cfg:       func(c *Config) { c.QueueDelay = 10 * ms; c.PrefillPerToken = ms; c.DecodePerToken = 5 * ms },
			in:        planInput{promptTokens: 8, maxTokens: 4},
			wantAt:    []time.Duration{18 * ms, 23 * ms, 28 * ms, 33 * ms},
			wantCount: []int{1, 1, 1, 1},
		},
		{
			name: "pattern 1,3 cycles",
			cfg: func(c *Config) {
				c.QueueDelay = 10 * ms
				c.PrefillPerToken = ms
				c.DecodePerToken = 5 * ms
				c.TokensPerEvent = []int{1, 3}
			},
			in:        planInput{promptTokens: 8, maxTokens: 6},
			wantAt:    []time.Duration{18 * ms, 33 * ms, 38 * ms, 43 * ms},
			wantCount: []int{1, 3, 1, 1},
		},
		{
			name:      "fixed 4 per event, last event short",
			cfg:       func(c *Config) { c.DecodePerToken = 2 * ms; c.TokensPerEvent = []int{4} },
			in:        planInput{promptTokens: 3, maxTokens: 10},
			wantAt:    []time.Duration{6 * ms, 14 * ms, 18 * ms},
			wantCount: []int{4, 4, 2},
		},
		{
			name:      "cached prompt tokens skip prefill",
			cfg:       func(c *Config) { c.PrefillPerToken = ms; c.DecodePerToken = 5 * ms },
			in:        planInput{promptTokens: 40, cachedTokens: 32, maxTokens: 2},
			wantAt:    []time.Duration{8 * ms, 13 * ms},
			wantCount: []int{1, 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustServer(t, tc.cfg)
			p := s.makePlan(tc.in)
			var at []time.Duration
			var count []int
			total := 0
			for _, e := range p.events {
				at = append(at, e.at)
				count = append(count, len(e.ids))
				total += len(e.ids)
				if e.tokens != total {
					t.Errorf("event at %v: cumulative tokens %d, want %d", e.at, e.tokens, total)
				}
			}
			if !slices.Equal(at, tc.wantAt) {
				t.Errorf("event times %v, want %v", at, tc.wantAt)
			}
			if !slices.Equal(count, tc.wantCount) {
				t.Errorf("tokens per event %v, want %v", count, tc.wantCount)
			}
			if len(p.ids) != tc.in.maxTokens || p.finish != "length" {
				t.Errorf("generated %d tokens, finish %q; want %d, length", len(p.ids), p.finish, tc.in.maxTokens)
			}
		})
	}
}

// TestPlanSplit checks that a split token's text is spread over two events, the second with no
// new token, halfway to the next token, and that no text is lost.
func TestPlanSplit(t *testing.T) {
	s := mustServer(t, func(c *Config) { c.DecodePerToken = 10 * ms; c.SplitEvery = 2 })
	p := s.makePlan(planInput{promptTokens: 1, maxTokens: 8, textSeed: 3})
	var text strings.Builder
	splits := 0
	for i, e := range p.events {
		text.WriteString(e.text)
		if len(e.ids) == 0 {
			splits++
			if e.text == "" {
				t.Errorf("event %d carries neither a token nor text", i)
			}
			prev := p.events[i-1]
			if e.tokens != prev.tokens {
				t.Errorf("split event %d changes the token count from %d to %d", i, prev.tokens, e.tokens)
			}
			if e.at-prev.at != 5*ms {
				t.Errorf("split event %d comes %v after its token, want half the decode time (5ms)", i, e.at-prev.at)
			}
		}
	}
	if splits == 0 {
		t.Fatalf("no event was split: %+v", p.events)
	}
	if want := s.textOf(p.ids); text.String() != want {
		t.Errorf("events carry %q, the tokens decode to %q", text.String(), want)
	}
}

// TestPlanJitter checks that jitter stays in bounds, is reproducible and depends on the seed.
func TestPlanJitter(t *testing.T) {
	s := mustServer(t, func(c *Config) { c.DecodePerToken = 10 * ms; c.Jitter = 0.5 })
	in := planInput{promptTokens: 1, maxTokens: 50, jitterSeed: 1}
	a, b := s.makePlan(in), s.makePlan(in)
	in.jitterSeed = 2
	c := s.makePlan(in)
	if !slices.Equal(a.tokenAt, b.tokenAt) {
		t.Errorf("one jitter seed gave two timings")
	}
	if slices.Equal(a.tokenAt, c.tokenAt) {
		t.Errorf("two jitter seeds gave one timing")
	}
	distinct := map[time.Duration]bool{}
	for k := 1; k < len(a.tokenAt); k++ {
		gap := a.tokenAt[k] - a.tokenAt[k-1]
		distinct[gap] = true
		if gap < 5*ms || gap > 15*ms {
			t.Errorf("gap %d is %v, outside 10ms ± 50%%", k, gap)
		}
	}
	if len(distinct) < 10 {
		t.Errorf("only %d distinct gaps in 50: jitter is not applied", len(distinct))
	}
}

// TestPlanEOS checks early end-of-sequence: counted in the tokens, no text, finish "stop", never
// before min_tokens and never with ignore_eos.
func TestPlanEOS(t *testing.T) {
	s := mustServer(t, func(c *Config) { c.EOSProbability = 1 })
	p := s.makePlan(planInput{promptTokens: 1, maxTokens: 10, minTokens: 3})
	if len(p.ids) != 4 || p.ids[3] != eosID || p.finish != "stop" {
		t.Errorf("with p=1 and min_tokens 3: ids %v finish %q, want 3 tokens then EOS, stop", p.ids, p.finish)
	}
	last := p.events[len(p.events)-1]
	if last.text != "" || last.tokens != 4 {
		t.Errorf("the EOS event carries %q and %d tokens, want no text and 4", last.text, last.tokens)
	}
	p = s.makePlan(planInput{promptTokens: 1, maxTokens: 10, ignoreEOS: true})
	if len(p.ids) != 10 || p.finish != "length" || slices.Contains(p.ids, eosID) {
		t.Errorf("ignore_eos: %d tokens, finish %q, want 10 without EOS, length", len(p.ids), p.finish)
	}
}

// sseEvent is one received event with its arrival time on the client.
type sseEvent struct {
	at    time.Time
	chunk chunk
}

// streamTimed sends a streamed request and timestamps each data event as it arrives.
func streamTimed(t *testing.T, url, body string, header map[string]string) (sent time.Time, evs []sseEvent) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	sent = time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		at := time.Now()
		var c chunk
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", line, err)
		}
		evs = append(evs, sseEvent{at, c})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sent, evs
}

// TestLatencyRealTime runs the latency model on the real clock with millisecond delays. It
// checks what cannot drift: no event leaves before its planned time, the server's stamps lie
// between the client's send and receive times, and the gaps between stamps follow decode time
// times tokens per event. Upper bounds are loose because the machine may be busy.
func TestLatencyRealTime(t *testing.T) {
	const (
		queue   = 20 * ms
		prefill = ms / 2
		decode  = 8 * ms
	)
	s, ts := startServer(t, func(c *Config) {
		c.Now = nil
		c.QueueDelay = queue
		c.PrefillPerToken = prefill
		c.DecodePerToken = decode
		c.TokensPerEvent = []int{1, 2}
		c.PrefixCaching = false
	})
	prompt := strings.Repeat(" the", 40) // 40 tokens, plus BOS
	sent, evs := streamTimed(t, ts.URL+"/v1/completions",
		`{"prompt":"`+prompt+`","max_tokens":7,"stream":true}`, map[string]string{"X-Sim-Stamp": "1"})
	if len(evs) != 5 {
		t.Fatalf("got %d events, want 5 (tokens 1,2,1,2,1)", len(evs))
	}
	n := s.tok.count(prompt, true)
	wantTTFT := queue + prefill*time.Duration(n)
	ttft := evs[0].at.Sub(sent)
	if ttft < wantTTFT {
		t.Errorf("TTFT %v is below the model's %v", ttft, wantTTFT)
	}
	if ttft > wantTTFT+2*time.Second {
		t.Errorf("TTFT %v is far above the model's %v", ttft, wantTTFT)
	}
	var prev int64
	for i, e := range evs {
		st := e.chunk.Sim
		if st == nil {
			t.Fatalf("event %d has no stamp", i)
		}
		if st.SentNS < sent.UnixNano() || st.SentNS > e.at.UnixNano() {
			t.Errorf("event %d stamped %d, outside [client send %d, client receive %d]", i, st.SentNS, sent.UnixNano(), e.at.UnixNano())
		}
		if i > 0 {
			gap := time.Duration(st.SentNS - prev)
			want := decode * time.Duration(st.Tokens)
			// The server sleeps to absolute targets, so a late event makes the next gap shorter;
			// the sum is what must hold. Check each gap loosely, the total tightly below.
			if gap > want+time.Second {
				t.Errorf("gap before event %d is %v, want about %v", i, gap, want)
			}
		}
		prev = st.SentNS
	}
	// Events are scheduled against absolute targets: the last one leaves no earlier than the
	// model's end time, however late the first one was.
	end := time.Duration(evs[4].chunk.Sim.SentNS - sent.UnixNano())
	if want := wantTTFT + 6*decode; end < want {
		t.Errorf("last event left %v after the request, below the model's %v", end, want)
	}
}

// TestConcurrencyQueue checks that requests beyond max concurrency wait: with one slot, the
// second request's first event leaves after the first request's last.
func TestConcurrencyQueue(t *testing.T) {
	s, ts := startServer(t, func(c *Config) {
		c.Now = nil
		c.MaxConcurrency = 1
		c.DecodePerToken = 3 * ms
	})
	body := `{"prompt":"the","max_tokens":6,"stream":true}`
	var wg sync.WaitGroup
	results := make([][]sseEvent, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = streamTimed(t, ts.URL+"/v1/completions", body, map[string]string{"X-Sim-Stamp": "1"})
		}()
	}
	wg.Wait()
	a, b := results[0], results[1]
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("empty streams: %d, %d events", len(a), len(b))
	}
	if a[0].chunk.Sim.SentNS > b[0].chunk.Sim.SentNS {
		a, b = b, a
	}
	if first, last := b[0].chunk.Sim.SentNS, a[len(a)-1].chunk.Sim.SentNS; first < last {
		t.Errorf("second request started streaming at %d, before the first finished at %d", first, last)
	}
	if s.running.Load() != 0 || s.waiting.Load() != 0 {
		t.Errorf("after both: running %d waiting %d", s.running.Load(), s.waiting.Load())
	}
}

// TestClientGoneFreesSlot checks that a client that leaves mid-stream releases its slot.
func TestClientGoneFreesSlot(t *testing.T) {
	s, ts := startServer(t, func(c *Config) { c.MaxConcurrency = 1; c.DecodePerToken = 50 * ms })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"the","max_tokens":100,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, func() bool { return s.running.Load() == 0 }, "the slot to be released")
	_, body, err := post(t, ts, "/v1/completions", `{"prompt":"the","max_tokens":1}`, nil)
	if err != nil || !strings.Contains(string(body), `"finish_reason":"length"`) {
		t.Errorf("next request: %v %s", err, body)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * ms)
	}
}
