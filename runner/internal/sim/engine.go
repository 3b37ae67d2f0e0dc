package sim

import (
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The batching engine plays vLLM V1's scheduler: one loop per server runs the engine step by
// step. A step advances every running request by one token and prefills the prompt tokens of the
// requests it admits (whole, or in chunks within a token budget); its length grows with both, so
// that decode slows down as the batch grows and a new prompt's prefill delays everyone's next
// token. Steps are planned on a virtual clock that follows absolute times, as the single-stream
// model does: a step that ends late on a busy machine does not push the model's later steps back.
// The loop sleeps once per step and wakes the streams whose tokens it produced; streams never
// keep their own timers except for the rest of a split token.

// seq is one request in the batching engine.
type seq struct {
	id      string    // the response id
	p       *plan     // its output; the engine fills p.tokenAt, p.queue and p.cached
	prompt  []int     // prompt ids, for the prefix cache
	start   time.Time // when the request reached the engine: the origin of p.tokenAt
	readyAt time.Time // start plus its queue delay: when the scheduler may first admit it

	notify  chan struct{} // buffered 1: the engine delivered a token or planned one
	planned atomic.Int32  // entries of p.tokenAt the engine has set
	done    atomic.Int32  // tokens whose step has ended
	left    atomic.Bool   // the handler is done with it; the engine drops it

	// Private to the engine's loop.
	state       int // seqWaiting, seqRunning or seqGone
	prefillLeft int // prompt tokens still to prefill
	chunk       int // tokens it takes in the step being planned
	generated   int // tokens planned so far
	sample      bool
	prefilled   bool // its prefill ends in the step being planned
}

const (
	seqWaiting = iota
	seqRunning
	seqGone
)

// wake tells the request's stream, without blocking, that its counts moved.
func (q *seq) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// engine is the batching engine of one server.
type engine struct {
	s       *Server
	maxSeqs int // 0: no bound
	budget  int // tokens per step; 0: no budget

	mu       sync.Mutex
	incoming []*seq
	kick     chan struct{} // buffered 1: a request arrived or left
	once     sync.Once

	// Private to the loop.
	waiting []*seq // by readyAt, then arrival
	running []*seq // in admission order
	sched   []*seq // the requests in the step being planned
	clock   time.Time
	rng     *rand.Rand
}

func newEngine(s *Server) *engine {
	return &engine{
		s:       s,
		maxSeqs: s.cfg.MaxNumSeqs,
		budget:  s.cfg.MaxNumBatchedTokens,
		kick:    make(chan struct{}, 1),
		rng:     rand.New(rand.NewPCG(s.cfg.Seed, 0x57e9)),
	}
}

// submit hands q to the engine, which may admit it after queue; the caller counted it as
// waiting. Its arrival time is taken here, under the lock, so that arrival order is the order
// the engine sees: first in, first out holds exactly.
func (e *engine) submit(q *seq, queue time.Duration) {
	e.once.Do(func() { go e.loop() })
	e.mu.Lock()
	q.start = time.Now()
	q.readyAt = q.start.Add(queue)
	e.incoming = append(e.incoming, q)
	e.mu.Unlock()
	e.poke()
}

// leave tells the engine that nobody reads q any more: a request that is still waiting or
// running is dropped before the next step, which frees its place in the batch.
func (e *engine) leave(q *seq) {
	if !q.left.Swap(true) {
		e.poke()
	}
}

func (e *engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// loop runs steps while there is work and sleeps while there is none, until the server closes.
func (e *engine) loop() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		e.take()
		at, ok := e.next()
		if !ok {
			select {
			case <-e.kick:
				continue
			case <-e.s.closed:
				return
			}
		}
		if d := time.Until(at); d > 0 {
			// Idle until the first waiting request is ready, or until one that arrives now is.
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.kick:
				timer.Stop()
			case <-e.s.closed:
				return
			}
			continue
		}
		e.clock = at
		if !e.step(timer) {
			return
		}
	}
}

// next returns when the next step starts: at the end of the last one while requests run, else
// when the first waiting request is ready, and never before the end of the last step. ok is
// false when no request is waiting or running.
func (e *engine) next() (at time.Time, ok bool) {
	switch {
	case len(e.running) > 0:
		return e.clock, true
	case len(e.waiting) > 0:
		at = e.waiting[0].readyAt
		if e.clock.After(at) {
			at = e.clock
		}
		return at, true
	}
	return time.Time{}, false
}

// take moves arrivals into the waiting queue and drops the requests whose handler has left.
func (e *engine) take() {
	e.mu.Lock()
	in := e.incoming
	e.incoming = nil
	e.mu.Unlock()
	for _, q := range in {
		// Keep the queue in order of readiness; with equal queue delays this is arrival order,
		// and an append.
		i := len(e.waiting)
		for i > 0 && e.waiting[i-1].readyAt.After(q.readyAt) {
			i--
		}
		e.waiting = append(e.waiting, nil)
		copy(e.waiting[i+1:], e.waiting[i:])
		e.waiting[i] = q
	}
	e.waiting = e.drop(e.waiting, &e.s.waiting)
	e.running = e.drop(e.running, &e.s.running)
}

// drop removes the requests that left from qs, counting them off gauge g.
func (e *engine) drop(qs []*seq, g *gauge) []*seq {
	out := qs[:0]
	for _, q := range qs {
		if q.left.Load() {
			q.state = seqGone
			g.add(-1)
			continue
		}
		out = append(out, q)
	}
	clear(qs[len(out):])
	return out
}

// step plans one engine step from e.clock, sleeps until it ends and delivers its tokens. It
// returns false when the server closed.
func (e *engine) step(timer *time.Timer) bool {
	start := e.clock
	prefill, decoders := e.schedule(start)
	end := start.Add(e.stepTime(prefill, decoders))
	e.planTokens(end, decoders)
	if wait := time.Until(end); wait > 0 {
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-e.s.closed:
			timer.Stop()
			return false
		}
	}
	e.clock = end
	e.s.steps.Add(1)
	e.deliver()
	return true
}

// schedule chooses the requests of the step that starts at start, into e.sched, and the tokens
// each takes in it (q.chunk). It returns the prompt tokens the step prefills and the number of
// requests it decodes a token for.
func (e *engine) schedule(start time.Time) (prefill, decoders int) {
	budget := e.budget
	if budget == 0 {
		budget = math.MaxInt
	}
	e.sched = e.sched[:0]
	// As vLLM V1's scheduler: running requests first, in order, a decode costing one token of the
	// budget and a prefill what is left of its prompt, up to the budget.
	for _, q := range e.running {
		if budget == 0 {
			break
		}
		if q.prefillLeft > 0 {
			q.chunk = min(q.prefillLeft, budget)
			prefill += q.chunk
		} else {
			q.chunk = 1
			decoders++
		}
		budget -= q.chunk
		e.sched = append(e.sched, q)
	}
	// Then waiting requests, first in first out, while the batch has room and budget is left.
	h := 0
	for ; h < len(e.waiting) && budget > 0 && (e.maxSeqs == 0 || len(e.running) < e.maxSeqs) &&
		!e.waiting[h].readyAt.After(start); h++ {
		q := e.waiting[h]
		e.admit(q, start, budget)
		prefill += q.chunk
		budget -= q.chunk
	}
	if h > 0 {
		// Shift the queue down rather than reslice its head away, so that it keeps its array.
		n := copy(e.waiting, e.waiting[h:])
		clear(e.waiting[n:])
		e.waiting = e.waiting[:n]
	}
	return prefill, decoders
}

// admit moves the waiting request q into the batch of the step that starts at start, where it
// takes as much of its prefill as budget allows. The caller removes it from the waiting queue.
func (e *engine) admit(q *seq, start time.Time, budget int) {
	q.state = seqRunning
	q.p.queue = start.Sub(q.start)
	if e.s.cache != nil {
		q.p.cached = e.s.cache.lookup(q.prompt)
	}
	e.s.met.addPrompt(len(q.prompt))
	// The last prompt token is always computed (the cache never holds it), so every admitted
	// request has a prefill.
	q.prefillLeft = max(len(q.prompt)-q.p.cached, 1)
	q.chunk = min(q.prefillLeft, budget)
	e.running = append(e.running, q)
	e.sched = append(e.sched, q)
	e.s.waiting.add(-1)
	e.s.running.add(1)
}

// stepTime is the length of a step that prefills prefill prompt tokens and decodes one token for
// each of decoders requests, jittered.
func (e *engine) stepTime(prefill, decoders int) time.Duration {
	c := &e.s.cfg
	d := c.PrefillPerToken * time.Duration(prefill)
	if decoders > 0 {
		d += c.DecodePerToken + c.DecodePerSeq*time.Duration(decoders-1)
	}
	return jitter(c.Jitter, e.rng, d)
}

// planTokens sets the time of the token each request of the step samples, the step ending at
// end. The tokens are planned before the step runs, so that a stream can place the rest of a
// split token halfway to the next one.
func (e *engine) planTokens(end time.Time, decoders int) {
	c := &e.s.cfg
	for _, q := range e.sched {
		q.sample, q.prefilled = true, false
		if q.prefillLeft > 0 {
			q.prefillLeft -= q.chunk
			q.prefilled = q.prefillLeft == 0
			// The step that ends a prefill samples the first token; a partial chunk samples none.
			q.sample = q.prefilled
		}
		if !q.sample {
			continue
		}
		k := q.generated
		at := end.Sub(q.start)
		q.p.tokenAt[k] = at
		n := k + 1
		if k == len(q.p.ids)-1 {
			// The token after the last one, which only a split of the last token uses: one
			// decode step of this batch later (unjittered), as the single-stream model has it.
			q.p.tokenAt[k+1] = at + c.DecodePerToken + c.DecodePerSeq*time.Duration(max(decoders, 1)-1)
			n++
		}
		q.generated++
		q.planned.Store(int32(n))
		if c.SplitEvery > 0 {
			q.wake()
		}
	}
}

// deliver ends the step that just ran: it caches the prompts whose prefill it ended, wakes the
// streams whose tokens it produced, and takes the requests it finished out of the batch.
func (e *engine) deliver() {
	finished := false
	for _, q := range e.sched {
		if q.prefilled && e.s.cache != nil {
			e.s.cache.insert(q.prompt)
		}
		if !q.sample {
			continue
		}
		if q.generated == len(q.p.ids) {
			q.state = seqGone
			e.s.running.add(-1)
			finished = true
			if e.s.traceSeq != nil {
				e.s.traceSeq(q)
			}
		}
		q.done.Store(int32(q.generated))
		q.wake()
	}
	if finished {
		out := e.running[:0]
		for _, q := range e.running {
			if q.state == seqRunning {
				out = append(out, q)
			}
		}
		clear(e.running[len(out):])
		e.running = out
	}
}

// await blocks until event ev of q may be sent; false when the client left or the server closed
// first.
func (s *Server) await(r *http.Request, q *seq, ev *genEvent) bool {
	for {
		// A text event waits for its last token; the rest of a split token waits for the next
		// token's time, then sleeps to the midpoint.
		if ev.half && q.planned.Load() > int32(ev.tokens) || !ev.half && q.done.Load() >= int32(ev.tokens) {
			break
		}
		select {
		case <-q.notify:
		case <-r.Context().Done():
			return false
		case <-s.closed:
			return false
		}
	}
	return s.sleepUntil(r, q.start.Add(q.p.eventAt(ev)))
}

// gauge is a level that remembers its peak.
type gauge struct {
	now, peak atomic.Int64
}

func (g *gauge) add(d int64) {
	v := g.now.Add(d)
	for {
		p := g.peak.Load()
		if v <= p || g.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// Load returns the current level.
func (g *gauge) Load() int64 { return g.now.Load() }

// resetPeak makes the current level the peak.
func (g *gauge) resetPeak() { g.peak.Store(g.now.Load()) }

// Stats is a snapshot of a server's load, as its scheduler sees it.
type Stats struct {
	// Running is the number of requests running now: admitted and not finished. Without the
	// batching engine, every request being served is running.
	Running int
	// Waiting is the number of requests waiting to be admitted now, their queue delay included.
	Waiting int
	// InFlight is the number of generation requests being served now, from arrival until just
	// before their last byte is written: waiting, running, or streaming what is left.
	InFlight int
	// PeakRunning, PeakWaiting and PeakInFlight are the highest values of the three since the
	// server started or since ResetPeaks.
	PeakRunning, PeakWaiting, PeakInFlight int
	// Steps is the number of steps the batching engine has run; 0 without it.
	Steps int64
}

// Stats returns the server's current and peak load. A closed loop of N clients never makes
// PeakInFlight exceed N: a request leaves the count before the end of its response is written.
func (s *Server) Stats() Stats {
	return Stats{
		Running:      int(s.running.Load()),
		Waiting:      int(s.waiting.Load()),
		InFlight:     int(s.inFlight.Load()),
		PeakRunning:  int(s.running.peak.Load()),
		PeakWaiting:  int(s.waiting.peak.Load()),
		PeakInFlight: int(s.inFlight.peak.Load()),
		Steps:        s.steps.Load(),
	}
}

// ResetPeaks makes the current levels the peaks, so that the next Stats describes only what
// follows, e.g. one load point.
func (s *Server) ResetPeaks() {
	s.running.resetPeak()
	s.waiting.resetPeak()
	s.inFlight.resetPeak()
}
