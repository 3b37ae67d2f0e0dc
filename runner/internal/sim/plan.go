package sim

import (
	"math/rand/v2"
	"time"
	"unicode/utf8"
)

// genEvent is one streamed piece of generated output.
type genEvent struct {
	at     time.Duration // when it is sent, after the request's admission; set by makePlan only
	ids    []int         // the new token ids it carries; empty for the rest of a split token
	text   string        // the text it carries
	tokens int           // completion tokens generated so far, this event's included
	half   bool          // the rest of a split token: sent halfway from token tokens-1 to the next
}

// plan is the whole output of one request and when each part of it is ready: what a real engine
// would produce, decided up front so it can be checked without a clock.
type plan struct {
	ids     []int           // every generated token id, the EOS token included when sampled
	tokenAt []time.Duration // when each token is generated; one extra entry for the token after
	events  []genEvent
	finish  string        // "length" or "stop"
	queue   time.Duration // queue delay (the scheduler's, after admission)
	cached  int           // prompt tokens found in the prefix cache
}

// eventAt returns when e is sent, from the token times: with its last token, or halfway to the
// next token for the rest of a split token.
func (p *plan) eventAt(e *genEvent) time.Duration {
	at := p.tokenAt[e.tokens-1]
	if e.half {
		at += (p.tokenAt[e.tokens] - at) / 2
	}
	return at
}

// planInput is what a plan depends on.
type planInput struct {
	promptTokens int
	cachedTokens int
	maxTokens    int
	minTokens    int
	ignoreEOS    bool
	textSeed     uint64
	jitterSeed   uint64
}

// makePlan generates a request's output and its timing from the latency model: token k is ready
// at queue + prefill·(uncached prompt tokens) + decode·k, each delay scaled by its own jitter
// factor; an event is sent when its last token is ready.
func (s *Server) makePlan(in planInput) plan {
	c := s.cfg
	p := s.makeOutput(in)
	p.cached = in.cachedTokens
	jr := rand.New(rand.NewPCG(in.jitterSeed, 0x5a17))
	jit := func(d time.Duration) time.Duration { return jitter(c.Jitter, jr, d) }
	p.queue = jit(c.QueueDelay)
	uncached := in.promptTokens - in.cachedTokens
	t := p.queue + jit(c.PrefillPerToken*time.Duration(uncached))
	for k := range p.tokenAt {
		if k > 0 {
			t += jit(c.DecodePerToken)
		}
		p.tokenAt[k] = t
	}
	for i := range p.events {
		p.events[i].at = p.eventAt(&p.events[i])
	}
	return p
}

// jitter scales d by a factor drawn from r, uniform in [1-j, 1+j].
func jitter(j float64, r *rand.Rand, d time.Duration) time.Duration {
	if j == 0 || d == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + j*(2*r.Float64()-1)))
}

// makeOutput generates a request's tokens and cuts them into events, without times: tokenAt is
// allocated (one entry per token and one for the token after) for the caller to fill.
func (s *Server) makeOutput(in planInput) plan {
	c := s.cfg
	text := rand.New(rand.NewPCG(in.textSeed, 0x7e47))
	eos := rand.New(rand.NewPCG(in.textSeed, 0xe05))

	var p plan
	p.finish = "length"
	p.ids = make([]int, 0, min(in.maxTokens, 1024))
	lastPunct := true
	for k := 0; k < in.maxTokens; k++ {
		if c.EOSProbability > 0 && !in.ignoreEOS && k >= in.minTokens && eos.Float64() < c.EOSProbability {
			p.ids = append(p.ids, eosID)
			p.finish = "stop"
			break
		}
		if !lastPunct && text.IntN(8) == 0 {
			p.ids = append(p.ids, punctID(text.IntN(len(punctuation))))
			lastPunct = true
			continue
		}
		p.ids = append(p.ids, wordID(text.IntN(len(vocabulary)), k > 0))
		lastPunct = false
	}
	p.tokenAt = make([]time.Duration, len(p.ids)+1)

	textEvents := 0
	for a, g := 0, 0; a < len(p.ids); g++ {
		b := min(a+c.TokensPerEvent[g%len(c.TokensPerEvent)], len(p.ids))
		ev := genEvent{ids: p.ids[a:b], tokens: b}
		ev.text = s.textOf(ev.ids)
		var rest *genEvent
		if ev.text != "" {
			textEvents++
			if c.SplitEvery > 0 && textEvents%c.SplitEvery == 0 {
				last, _ := s.tok.piece(ev.ids[len(ev.ids)-1])
				if n := utf8.RuneCountInString(last); n >= 2 && ev.ids[len(ev.ids)-1] != eosID {
					cut := len(string([]rune(last)[:n/2]))
					ev.text = s.textOf(ev.ids[:len(ev.ids)-1]) + last[:cut]
					rest = &genEvent{ids: []int{}, text: last[cut:], tokens: b, half: true}
				}
			}
		}
		p.events = append(p.events, ev)
		if rest != nil {
			p.events = append(p.events, *rest)
		}
		a = b
	}
	return p
}

// textOf returns the text generated ids carry; the EOS token carries none.
func (s *Server) textOf(ids []int) string {
	t, err := s.tok.decode(ids, true)
	if err != nil {
		// Generated ids always come from the vocabulary.
		panic("sim: generated an unknown token: " + err.Error())
	}
	return t
}
