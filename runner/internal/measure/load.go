package measure

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// The arrival processes of an open loop.
const (
	ArrivalConstant = "constant" // one request every 1/rate seconds
	ArrivalPoisson  = "poisson"  // exponential gaps: a Poisson process
	ArrivalGamma    = "gamma"    // gamma gaps of shape burstiness, as vLLM's --burstiness
)

// Load is how RunLoad sends the requests of one load point: a closed loop keeps Concurrency
// requests in flight, an open loop sends Rate requests per second at the moments an arrival
// process draws from Seed, at most MaxConcurrency at once when that is positive.
type Load struct {
	Concurrency    int     // closed loop; ignored when Rate is positive
	Rate           float64 // open loop: requests per second
	Arrival        string  // open loop: ArrivalConstant, ArrivalPoisson or ArrivalGamma
	Burstiness     float64 // ArrivalGamma's shape: 1 is a Poisson process, below 1 burstier
	MaxConcurrency int     // open loop: requests in flight at most; 0 means no cap
	Seed           int64   // seeds the arrival process
}

// Open reports whether l is an open loop.
func (l Load) Open() bool { return l.Rate > 0 }

// Validate reports the first setting of l that cannot run.
func (l Load) Validate() error {
	switch {
	case l.Open():
		if math.IsInf(l.Rate, 0) || math.IsNaN(l.Rate) {
			return fmt.Errorf("rate %v is not a finite number", l.Rate)
		}
		switch l.Arrival {
		case ArrivalConstant, ArrivalPoisson:
		case ArrivalGamma:
			if !(l.Burstiness > 0) || math.IsInf(l.Burstiness, 0) {
				return fmt.Errorf("burstiness %v must be a positive number", l.Burstiness)
			}
		default:
			return fmt.Errorf("arrival %q is none of constant, poisson, gamma", l.Arrival)
		}
		if l.MaxConcurrency < 0 {
			return fmt.Errorf("max concurrency %d is negative", l.MaxConcurrency)
		}
	case l.Concurrency < 1:
		return fmt.Errorf("concurrency %d must be at least 1 (or set a rate)", l.Concurrency)
	}
	return nil
}

// Arrivals draws the moments at which an open loop sends its requests, counted from the load
// point's start: the first at 0, then gaps drawn independently with mean 1/rate. The draw
// depends only on the seed (its own generator, splitmix64, and its own samplers, so that no
// change of the standard library's random streams can change a schedule), so every run and
// every machine sends at the same moments.
type Arrivals struct {
	kind  string
	rate  float64
	shape float64
	state uint64
	at    float64 // seconds from the start of the next arrival
	spare float64 // the second normal deviate of the last Box-Muller pair
	have  bool
}

// NewArrivals returns the arrival process of an open loop at rate requests per second.
func NewArrivals(rate float64, arrival string, burstiness float64, seed int64) *Arrivals {
	return &Arrivals{kind: arrival, rate: rate, shape: burstiness, state: uint64(seed) ^ 0x6172726976616c} // "arrival"
}

// Next returns the scheduled moment of the next request.
func (a *Arrivals) Next() time.Duration {
	at := a.at
	a.at += a.gap()
	return time.Duration(math.Round(at * float64(time.Second)))
}

// gap draws the time to the next arrival, in seconds.
func (a *Arrivals) gap() float64 {
	mean := 1 / a.rate
	switch a.kind {
	case ArrivalPoisson:
		return mean * a.exponential()
	case ArrivalGamma:
		// Shape k and scale mean/k: the mean stays 1/rate, the coefficient of variation
		// is 1/sqrt(k).
		return mean / a.shape * a.gamma(a.shape)
	default:
		return mean
	}
}

// uniform returns a number in [0, 1) from splitmix64.
func (a *Arrivals) uniform() float64 {
	a.state += 0x9e3779b97f4a7c15
	return float64(mix64(a.state)>>11) / (1 << 53)
}

// exponential returns a draw of the exponential distribution of mean 1.
func (a *Arrivals) exponential() float64 { return -math.Log1p(-a.uniform()) }

// normal returns a standard normal draw (Box-Muller, both deviates used).
func (a *Arrivals) normal() float64 {
	if a.have {
		a.have = false
		return a.spare
	}
	u1 := 1 - a.uniform() // (0, 1]: the logarithm stays finite
	u2 := a.uniform()
	r := math.Sqrt(-2 * math.Log(u1))
	a.spare, a.have = r*math.Sin(2*math.Pi*u2), true
	return r * math.Cos(2*math.Pi*u2)
}

// gamma returns a draw of the gamma distribution of shape k and scale 1: Marsaglia and Tsang's
// method, with the usual boost u^(1/k) for k below 1.
func (a *Arrivals) gamma(k float64) float64 {
	if k < 1 {
		u := 1 - a.uniform()
		return a.gamma(k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := a.normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := a.uniform()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// LoadResult is one request of a load point as RunLoad sent it.
type LoadResult struct {
	Index int // the request's position in the load point's send order, from 0
	// Record is the request as measured, with its load fields (LoadMode, Concurrency, Rate,
	// Scheduled, SendLag, CapWait, InFlight) filled; empty when Err is set.
	Record record.Request
	// Err says why the request was not sent: its prepare function failed, or ctx ended before
	// it went out. A request a stopped load point never started is not handed on at all.
	Err error
}

// RunLoad sends the n requests of one load point through c under load l, and hands each to
// done as it completes, in completion order, one at a time on the caller's goroutine.
//
// prepare returns request i's spec; it runs before the request's scheduled moment is taken
// (a closed loop) or before its arrival (an open loop), so the time it takes (a cache reset, say)
// is not the client's lateness. A prepare error is handed to done as the request's Err.
//
// Every request is timed exactly as a single request is (Client.Do). Its Scheduled is when the
// load wanted it sent, counted from the load point's start: its arrival under an open loop, the
// moment its slot was free and it was prepared under a closed loop. SendLag is t0 − Scheduled,
// and CapWait the part of it spent waiting for a slot under an open loop's MaxConcurrency.
//
// When done returns an error, or ctx ends, no further request is sent; the requests in flight
// are cancelled (after done's error) or end as ctx makes them, and RunLoad returns once they
// have: the error done returned, else ctx's error, else nil.
func RunLoad(ctx context.Context, c *Client, l Load, n int, prepare func(ctx context.Context, i int) (Spec, error), done func(LoadResult) error) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if n <= 0 {
		return ctx.Err()
	}
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The results wait for done in a buffer with room for every request that can be in flight
	// (up to 1,024), so that a slot whose request has ended never waits for done to record an
	// earlier one before it sends its next request.
	room := min(n, 1024)
	if !l.Open() {
		room = min(room, max(l.Concurrency, 64))
	} else if l.MaxConcurrency > 0 {
		room = min(room, max(l.MaxConcurrency, 64))
	}
	lr := &loadRun{c: c, l: l, n: n, prepare: prepare, ctx: stopCtx, out: make(chan LoadResult, room), start: c.now()}
	if l.Open() {
		lr.mode, lr.capWait = record.LoadOpen, l.MaxConcurrency > 0
		lr.wg.Add(1)
		go lr.open()
	} else {
		lr.mode = record.LoadClosed
		for range min(l.Concurrency, n) {
			lr.wg.Add(1)
			go lr.closed()
		}
	}
	go func() {
		lr.wg.Wait()
		close(lr.out)
	}()
	var failed error
	for r := range lr.out {
		if failed != nil {
			continue // draining: the caller no longer wants results
		}
		if err := done(r); err != nil {
			failed = err
			stop()
		}
	}
	if failed != nil {
		return failed
	}
	return ctx.Err()
}

// loadRun is one RunLoad in progress.
type loadRun struct {
	c        *Client
	l        Load
	n        int
	prepare  func(context.Context, int) (Spec, error)
	ctx      context.Context
	out      chan LoadResult
	start    time.Time // the load point's start, with its monotonic reading
	mode     record.LoadMode
	capWait  bool
	next     atomic.Int64 // the next index a closed loop sends
	inFlight atomic.Int64
	wg       sync.WaitGroup
}

// closed is one slot of a closed loop: it sends the next unsent request whenever its last one
// has ended.
func (lr *loadRun) closed() {
	defer lr.wg.Done()
	for {
		i := int(lr.next.Add(1) - 1)
		if i >= lr.n {
			return
		}
		if lr.ctx.Err() != nil {
			return
		}
		spec, ok := lr.prepared(i)
		if !ok {
			continue
		}
		lr.send(i, spec, lr.c.now().Sub(lr.start), -1)
	}
}

// prepared returns request i's spec. When its preparation fails, the failure is request i's
// result, sent to the collector here, and ok is false: the loop goes on with the next request.
func (lr *loadRun) prepared(i int) (spec Spec, ok bool) {
	spec, err := lr.prepare(lr.ctx, i)
	if err != nil {
		lr.out <- LoadResult{Index: i, Err: err}
		return Spec{}, false
	}
	return spec, true
}

// open is the dispatcher of an open loop: it waits for each arrival, then for a slot when the
// loop has a cap, and sends the request on a goroutine of its own.
func (lr *loadRun) open() {
	defer lr.wg.Done()
	var slots chan struct{}
	if lr.l.MaxConcurrency > 0 {
		slots = make(chan struct{}, lr.l.MaxConcurrency)
	}
	arrivals := NewArrivals(lr.l.Rate, lr.l.Arrival, lr.l.Burstiness, lr.l.Seed)
	var blockedUntil time.Time // when the dispatcher last got a slot it had to wait for
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for i := 0; i < lr.n; i++ {
		at := arrivals.Next()
		if lr.ctx.Err() != nil {
			return
		}
		spec, ok := lr.prepared(i)
		if !ok {
			continue
		}
		if !lr.waitUntil(timer, at) {
			return
		}
		capWait := time.Duration(-1)
		if slots != nil {
			// The wait for the cap runs from the request's arrival: a request that arrived
			// while the dispatcher was still waiting for a slot for an earlier one waited
			// for the cap too, though its own slot may then come at once.
			due := lr.start.Add(at)
			blocked := blockedUntil.After(due)
			select {
			case slots <- struct{}{}:
			default:
				blocked = true
				select {
				case slots <- struct{}{}:
				case <-lr.ctx.Done():
					return
				}
				blockedUntil = lr.c.now()
			}
			capWait = 0
			if blocked {
				capWait = max(lr.c.now().Sub(due), 0)
			}
		}
		lr.wg.Add(1)
		go func() {
			defer lr.wg.Done()
			lr.send(i, spec, at, capWait)
			if slots != nil {
				<-slots
			}
		}()
	}
}

// spinWindow is the last stretch of an open loop's wait for an arrival, which the dispatcher
// spends watching the clock instead of on a timer. Go wakes a goroutine whose timer is due when
// a thread comes back from epoll_wait, and on an idle client that wait counts whole
// milliseconds: on timers alone, requests went out up to a millisecond late (send_lag p50 0.6 ms
// at 100 requests/s in BenchmarkLoad). Watching costs at most this much CPU per request, and
// yields to every other goroutine while it does.
const spinWindow = time.Millisecond

// waitUntil waits until at from the load point's start, and reports false when ctx ended first.
func (lr *loadRun) waitUntil(timer *time.Timer, at time.Duration) bool {
	left := at - lr.c.now().Sub(lr.start)
	if left > spinWindow {
		timer.Reset(left - spinWindow)
		select {
		case <-timer.C:
		case <-lr.ctx.Done():
			return false
		}
		left = at - lr.c.now().Sub(lr.start)
	}
	// The watch runs on the real clock, so that a client whose Now is a test's fake clock
	// still waits at most spinWindow here.
	for end := time.Now().Add(min(left, spinWindow)); time.Now().Before(end); {
		runtime.Gosched()
	}
	return lr.ctx.Err() == nil
}

// send sends request i, scheduled at sched from the load point's start, and hands on its result.
// capWait is negative when the load has no cap.
func (lr *loadRun) send(i int, spec Spec, sched, capWait time.Duration) {
	lr.inFlight.Add(1)
	var t0 time.Time
	var inFlight int
	spec.OnSend = func(t time.Time) {
		t0 = t
		inFlight = int(lr.inFlight.Load())
	}
	// One LoadResult, filled in place: each record.Request copied through a temporary takes
	// a stack slot of its own on the request goroutine, whose stack every stream keeps.
	r := LoadResult{Index: i}
	r.Record, r.Err = lr.c.Do(lr.ctx, spec)
	lr.inFlight.Add(-1)
	if r.Err != nil {
		lr.out <- r
		return
	}
	rec := &r.Record
	rec.LoadMode = lr.mode
	if lr.mode == record.LoadOpen {
		rec.Rate, rec.Concurrency = lr.l.Rate, lr.l.MaxConcurrency
	} else {
		rec.Concurrency = lr.l.Concurrency
	}
	rec.InFlight = inFlight
	rec.Scheduled = record.Dur(sched)
	if !t0.IsZero() {
		rec.SendLag = record.Dur(t0.Sub(lr.start) - sched)
	}
	if capWait >= 0 {
		rec.CapWait = record.Dur(capWait)
	}
	lr.out <- r
}
