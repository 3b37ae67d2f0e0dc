package sim

import (
	"slices"
	"testing"
	"time"
)

const us = time.Microsecond

// simReq is one request of an engine test: when it arrives and its prompt and output lengths.
type simReq struct {
	at     time.Duration
	prompt int
	tokens int
}

// runSteps feeds reqs to the batching engine of a server built from testConfig and mutate, and
// runs the engine on its virtual clock with every time an hour in the past, so that no step
// sleeps: the planned times come out of the model alone, whatever the machine's load. It
// returns the server and the requests in the order of reqs.
func runSteps(t *testing.T, mutate func(*Config), reqs []simReq) (*Server, []*seq) {
	t.Helper()
	s := mustServer(t, func(c *Config) {
		c.PrefixCaching = false
		mutate(c)
	})
	e := s.eng
	if e == nil {
		t.Fatal("the config does not turn the batching engine on")
	}
	base := time.Now().Add(-time.Hour)
	e.clock = base
	qs := make([]*seq, len(reqs))
	for i, r := range reqs {
		p := s.makeOutput(planInput{promptTokens: r.prompt, maxTokens: r.tokens, textSeed: uint64(i)})
		prompt := make([]int, r.prompt)
		for k := range prompt {
			prompt[k] = wordID((i*r.prompt+k)%len(vocabulary), k > 0)
		}
		start := base.Add(r.at)
		qs[i] = &seq{p: &p, prompt: prompt, start: start, readyAt: start.Add(s.cfg.QueueDelay), notify: make(chan struct{}, 1)}
		s.waiting.add(1)
		e.incoming = append(e.incoming, qs[i])
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for range 100000 {
		e.take()
		at, ok := e.next()
		if !ok {
			break
		}
		e.clock = at
		if !e.step(timer) {
			t.Fatal("the engine stopped")
		}
	}
	for i, q := range qs {
		if int(q.done.Load()) != len(q.p.ids) {
			t.Fatalf("request %d: %d of %d tokens delivered", i, q.done.Load(), len(q.p.ids))
		}
	}
	return s, qs
}

// admittedAt returns when the engine admitted q, from the request's arrival.
func admittedAt(q *seq) time.Duration { return q.p.queue }

// TestEngineMaxNumSeqs checks the waiting queue with max-num-seqs 4 and 16 requests that arrive
// together: four at a time run, in arrival order, and a later group's wait is in its TTFT.
func TestEngineMaxNumSeqs(t *testing.T) {
	const (
		queue   = 2 * ms
		prefill = 100 * us
		decode  = 5 * ms
		perSeq  = ms
		prompt  = 10
		tokens  = 8
	)
	s, qs := runSteps(t, func(c *Config) {
		c.MaxNumSeqs = 4
		c.QueueDelay = queue
		c.PrefillPerToken = prefill
		c.DecodePerToken = decode
		c.DecodePerSeq = perSeq
	}, slices.Repeat([]simReq{{prompt: prompt, tokens: tokens}}, 16))

	// A group prefills its four prompts in one step, then decodes four at a time.
	groupPrefill := 4 * prompt * prefill
	group := groupPrefill + (tokens-1)*(decode+3*perSeq)
	for i, q := range qs {
		g := time.Duration(i / 4)
		if got, want := admittedAt(q), queue+g*group; got != want {
			t.Errorf("request %d admitted at %v, want %v (group %d)", i, got, want, g)
		}
		if got, want := q.p.tokenAt[0], queue+g*group+groupPrefill; got != want {
			t.Errorf("request %d: first token at %v, want %v: its wait, then the group's prefill", i, got, want)
		}
		if got, want := q.p.tokenAt[tokens-1], queue+(g+1)*group; got != want {
			t.Errorf("request %d: last token at %v, want %v", i, got, want)
		}
	}
	st := s.Stats()
	if st.PeakRunning != 4 || st.PeakWaiting != 16 || st.Running != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v, want peak running 4, peak waiting 16, none left", st)
	}
}

// TestEngineFIFO checks that requests arriving one after another are admitted in arrival order,
// whatever their lengths, and that one never runs beside more than max-num-seqs - 1 others.
func TestEngineFIFO(t *testing.T) {
	var reqs []simReq
	for i := range 24 {
		reqs = append(reqs, simReq{at: time.Duration(i) * 700 * us, prompt: 4 + 7*i%23, tokens: 2 + 5*i%11})
	}
	s, qs := runSteps(t, func(c *Config) {
		c.MaxNumSeqs = 3
		c.PrefillPerToken = 50 * us
		c.DecodePerToken = 2 * ms
		c.DecodePerSeq = 500 * us
	}, reqs)
	for i := 1; i < len(qs); i++ {
		prev, cur := qs[i-1].start.Add(admittedAt(qs[i-1])), qs[i].start.Add(admittedAt(qs[i]))
		if cur.Before(prev) {
			t.Errorf("request %d admitted %v before request %d, which arrived earlier", i, prev.Sub(cur), i-1)
		}
	}
	// At any admission, the requests admitted and not yet finished are at most 3.
	for i, q := range qs {
		at := q.start.Add(admittedAt(q))
		n := 0
		for _, o := range qs {
			if !o.start.Add(admittedAt(o)).After(at) && o.start.Add(o.p.tokenAt[len(o.p.ids)-1]).After(at) {
				n++
			}
		}
		if n > 3 {
			t.Errorf("at request %d's admission %d requests run", i, n)
		}
	}
	if st := s.Stats(); st.PeakRunning != 3 {
		t.Errorf("peak running %d, want 3", st.PeakRunning)
	}
}

// TestEngineBatchSlowsDecode checks the decode step against the model: n requests decoding
// together take DecodePerToken + DecodePerSeq × (n - 1) per token, so TPOT at batch 8 exceeds
// TPOT at batch 1 by 7 × DecodePerSeq, exactly, on the engine's own clock.
func TestEngineBatchSlowsDecode(t *testing.T) {
	const (
		prefill = 200 * us
		decode  = 4 * ms
		perSeq  = 1500 * us
		prompt  = 16
		tokens  = 32
	)
	tpot := map[int]time.Duration{}
	for _, n := range []int{1, 2, 8} {
		_, qs := runSteps(t, func(c *Config) {
			c.PrefillPerToken = prefill
			c.DecodePerToken = decode
			c.DecodePerSeq = perSeq
		}, slices.Repeat([]simReq{{prompt: prompt, tokens: tokens}}, n))
		for i, q := range qs {
			if got, want := q.p.tokenAt[0], time.Duration(n)*prompt*prefill; got != want {
				t.Errorf("batch %d, request %d: first token at %v, want %v (the batch's prompts in one step)", n, i, got, want)
			}
			got := (q.p.tokenAt[tokens-1] - q.p.tokenAt[0]) / (tokens - 1)
			if want := decode + time.Duration(n-1)*perSeq; got != want {
				t.Errorf("batch %d, request %d: TPOT %v, want %v", n, i, got, want)
			}
			tpot[n] = got
		}
	}
	if got, want := tpot[8]-tpot[1], 7*perSeq; got != want {
		t.Errorf("TPOT at batch 8 exceeds batch 1 by %v, want 7 × decode-per-seq = %v", got, want)
	}
}

// TestEnginePrefillStalls checks that a request admitted while others decode delays their next
// token by its prefill time: the whole prompt's without a token budget, a chunk's per step with
// one.
func TestEnginePrefillStalls(t *testing.T) {
	const (
		prefill = 100 * us
		decode  = 3 * ms
		perSeq  = ms
		long    = 200 // the late request's prompt
		budget  = 64
	)
	steady := decode + 2*perSeq // three decoding
	cases := []struct {
		name   string
		budget int
		stalls []time.Duration // the first request's gaps from the late request's admission on
	}{
		{"whole prompt", 0, []time.Duration{steady + long*prefill, decode + 3*perSeq}},
		// Three decodes take 3 tokens of 64: the prompt goes in chunks of 61, 61, 61 and 17, and
		// the step of the last chunk samples its first token.
		{"chunked", budget, []time.Duration{
			steady + 61*prefill, steady + 61*prefill, steady + 61*prefill, steady + 17*prefill,
			decode + 3*perSeq,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := []simReq{{prompt: 8, tokens: 40}, {prompt: 8, tokens: 40}, {prompt: 8, tokens: 40},
				{at: 30*ms + 10*us, prompt: long, tokens: 4}}
			_, qs := runSteps(t, func(c *Config) {
				c.PrefillPerToken = prefill
				c.DecodePerToken = decode
				c.DecodePerSeq = perSeq
				c.MaxNumBatchedTokens = tc.budget
			}, reqs)
			first, late := qs[0].p.tokenAt, qs[3]
			// The late request is admitted at the first step boundary after it arrived.
			k := slices.IndexFunc(first, func(at time.Duration) bool { return at >= reqs[3].at })
			if got := admittedAt(late); got != first[k]-reqs[3].at {
				t.Fatalf("late request admitted %v after arriving, want %v (the next step)", got, first[k]-reqs[3].at)
			}
			for j := 1; j < k; j++ {
				if gap := first[j] - first[j-1]; gap != steady {
					t.Errorf("gap %d before the late request is %v, want %v", j, gap, steady)
				}
			}
			for j, want := range tc.stalls {
				if gap := first[k+j+1] - first[k+j]; gap != want {
					t.Errorf("gap %d after the late request's admission is %v, want %v", j, gap, want)
				}
			}
			n := len(tc.stalls) - 1
			if got, want := late.p.tokenAt[0], first[k+n]-reqs[3].at; got != want {
				t.Errorf("late request's first token at %v, want %v (with the end of its prefill)", got, want)
			}
		})
	}
}

// TestEngineAloneMatchesPlan checks that a request alone on the batching engine is timed as by
// the single-stream model, whatever the batching settings: queue delay, prefill (whole or in
// chunks), decode per token, and split events halfway to the next token, the last one included.
func TestEngineAloneMatchesPlan(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(*Config)
		req  simReq
	}{
		{"max-num-seqs", func(c *Config) { c.MaxNumSeqs = 4 }, simReq{prompt: 40, tokens: 12}},
		{"decode-per-seq", func(c *Config) { c.DecodePerSeq = 7 * ms }, simReq{prompt: 3, tokens: 5}},
		{"chunked prefill", func(c *Config) { c.MaxNumBatchedTokens = 16 }, simReq{prompt: 90, tokens: 6}},
		{"one token", func(c *Config) { c.MaxNumSeqs = 2 }, simReq{prompt: 5, tokens: 1}},
		{"split every event", func(c *Config) { c.MaxNumSeqs = 1; c.SplitEvery = 1 }, simReq{prompt: 5, tokens: 9}},
		{"tokens per event", func(c *Config) { c.DecodePerSeq = ms; c.TokensPerEvent = []int{1, 3} }, simReq{prompt: 5, tokens: 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := func(c *Config) {
				c.QueueDelay = 3 * ms
				c.PrefillPerToken = 150 * us
				c.DecodePerToken = 4 * ms
				tc.cfg(c)
			}
			_, qs := runSteps(t, model, []simReq{tc.req})
			want := mustServer(t, func(c *Config) {
				model(c)
				c.MaxNumSeqs, c.DecodePerSeq, c.MaxNumBatchedTokens = 0, 0, 0
			}).makePlan(planInput{promptTokens: tc.req.prompt, maxTokens: tc.req.tokens})
			got := qs[0].p
			if !slices.Equal(got.tokenAt, want.tokenAt) {
				t.Errorf("token times %v, want %v", got.tokenAt, want.tokenAt)
			}
			if len(got.events) != len(want.events) {
				t.Fatalf("%d events, want %d", len(got.events), len(want.events))
			}
			for i := range got.events {
				if at := got.eventAt(&got.events[i]); at != want.events[i].at {
					t.Errorf("event %d at %v, want %v", i, at, want.events[i].at)
				}
			}
		})
	}
}

// TestEngineConfig checks which settings turn the engine on and which combinations are refused.
func TestEngineConfig(t *testing.T) {
	cases := []struct {
		name     string
		cfg      func(*Config)
		batching bool
		bad      bool
	}{
		{"default", func(*Config) {}, false, false},
		{"max concurrency alone keeps the single-stream model", func(c *Config) { c.MaxConcurrency = 2 }, false, false},
		{"max-num-seqs", func(c *Config) { c.MaxNumSeqs = 2 }, true, false},
		{"decode-per-seq", func(c *Config) { c.DecodePerSeq = ms }, true, false},
		{"budget", func(c *Config) { c.MaxNumBatchedTokens = 512 }, true, false},
		{"budget below max-num-seqs", func(c *Config) { c.MaxNumSeqs = 8; c.MaxNumBatchedTokens = 4 }, true, true},
		{"max concurrency with batching", func(c *Config) { c.MaxConcurrency = 2; c.DecodePerSeq = ms }, true, true},
		{"negative max-num-seqs", func(c *Config) { c.MaxNumSeqs = -1 }, false, true},
		{"negative decode-per-seq", func(c *Config) { c.DecodePerSeq = -ms }, false, true},
		{"negative budget", func(c *Config) { c.MaxNumBatchedTokens = -1 }, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.cfg(&c)
			if err := c.Validate(); (err != nil) != tc.bad {
				t.Errorf("Validate: %v, want an error: %v", err, tc.bad)
			}
			if c.batching() != tc.batching {
				t.Errorf("batching %v, want %v", c.batching(), tc.batching)
			}
		})
	}
}
