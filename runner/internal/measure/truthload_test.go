package measure

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// lateBound bounds the median lag of a request's events under load: how late the client
// timestamps an event after the simulator stamped it sent. With 16 streams whose events the
// simulator sends at the same moments (every stream decodes in lockstep, the way one batch of
// a real server does), an event also waits for the reader goroutines of the events ahead of it,
// about 10 µs each, and on 2 shared cores for a thread that another process holds.
//
// The checks do not ask every event to be on time: a machine running other work can stall the
// whole test process for seconds (1.9 s has been seen), and an event the simulator stamped just
// before such a stall is read after it. The simulator runs in the same process, so a stall
// holds its sends back too and the events after it are stamped late as well: a stall makes one
// event of a stream late, not the stream. What a wrong timing does is different: an event timed
// in the wrong place (after the next read, at the end of the stream, a step late) is late by a
// decode step or more in most of a request's events, and truthDecode is above lateBound. So:
//   - every event arrives after it was sent, never before (the clock is read in the right
//     order);
//   - the median lag of a request's events is at most lateBound (events are timed as they
//     come);
//   - ttft, tpot_event and tpot_token are exactly what the definitions give from the client's
//     own event times and the simulator's token counts, with the first and last text events
//     the simulator's, not the client's idea of them;
//   - ttft is off by the first text event's lag alone, so that lag is bounded too: its median
//     over the requests under load, and in one of three attempts of a single stream.
const (
	lateBound   = 50 * time.Millisecond
	truthDecode = 60 * time.Millisecond
)

// TestGroundTruthUnderLoad runs a closed loop of 16 streams against the simulator and checks
// every request's ttft, tpot_event and tpot_token against the simulator's send stamps.
func TestGroundTruthUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test; skipped with -short")
	}
	const streams, perStream = 16, 2
	tests := []struct {
		name      string
		api       openai.API
		perEvent  []int
		split     int
		maxTokens int
	}{
		{"completions, one token per event", openai.Completions, []int{1}, 0, 24},
		{"chat, 1-3-1 tokens per event with split text", openai.Chat, []int{1, 3, 1}, 4, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startSim(t, func(c *sim.Config) {
				c.QueueDelay = 2 * time.Millisecond
				c.PrefillPerToken = 100 * time.Microsecond
				c.DecodePerToken = truthDecode
				c.TokensPerEvent = tt.perEvent
				c.SplitEvery = tt.split
			})
			hc := NewHTTP()
			tee := &indexTee{base: hc.Transport}
			hc.Transport = tee
			c := newClient(ts, tee)
			c.HTTP = hc
			prepare := func(_ context.Context, i int) (Spec, error) {
				s := spec(tt.api, tt.maxTokens)
				s.Params.Prompt = taggedPrompt(i)
				return s, nil
			}
			n := streams * perStream
			recs := make([]record.Request, n)
			err := RunLoad(context.Background(), c, Load{Concurrency: streams}, n, prepare, func(r LoadResult) error {
				if r.Err != nil {
					t.Errorf("request %d: %v", r.Index, r.Err)
				}
				recs[r.Index] = r.Record
				return nil
			})
			if err != nil {
				t.Fatalf("RunLoad: %v", err)
			}
			most := 0
			var firstLags []time.Duration
			for i, rec := range recs {
				if rec.Status != record.StatusOK {
					t.Fatalf("request %d: status %q: %s %s", i, rec.Status, rec.ErrorClass, rec.Error)
				}
				most = max(most, rec.InFlight)
				problems, lag := truthProblems(rec, stamps(t, tee.body(i)), lateBound)
				for _, p := range problems {
					t.Errorf("request %d: %s", i, p)
				}
				firstLags = append(firstLags, lag)
			}
			// ttft is off by its first text event's lag: a stall can delay some requests' first
			// events, not most of them.
			slices.Sort(firstLags)
			if med := medianDuration(firstLags); med > lateBound {
				t.Errorf("median lag of the first text events %v, want at most %v (sorted: %v)", med, lateBound, firstLags)
			}
			// The load was real: the streams overlapped.
			if most != streams {
				t.Errorf("at most %d requests in flight, want %d", most, streams)
			}
		})
	}
}

// truthProblems compares a request's metrics with the simulator's stamps gt on its events, as
// lateBound's comment says, with bound in place of lateBound, and returns what is off, and the
// lag of its first text event: ttft is off by exactly that lag, which the callers bound as a
// stall cannot move it (one attempt among three, the median over many requests).
func truthProblems(rec record.Request, gt []truth, bound time.Duration) (problems []string, firstLag time.Duration) {
	var out []string
	if len(gt) != rec.Events || len(gt) != len(rec.EventList) {
		return []string{fmt.Sprintf("client saw %d events, server sent %d", rec.Events, len(gt))}, 0
	}
	var textIdx []int
	for k, g := range gt {
		if g.text {
			textIdx = append(textIdx, k)
		}
	}
	if len(textIdx) < 2 {
		return []string{fmt.Sprintf("%d text events, want at least 2", len(textIdx))}, 0
	}
	first, last := textIdx[0], textIdx[len(textIdx)-1]
	tokensAfterFirst := 0
	for _, g := range gt[first+1 : last+1] {
		tokensAfterFirst += g.tokens
	}
	lags := make([]time.Duration, len(rec.EventList))
	for k, e := range rec.EventList {
		lags[k] = rec.Start.Add(e.SinceT0).Sub(gt[k].sent)
		if k == first {
			firstLag = lags[k]
		}
		// Two readings of the wall clock in one process cannot disagree by more than the
		// drift between its wall and monotonic readings over one request: far below 1 ms.
		if lags[k] < -time.Millisecond {
			out = append(out, fmt.Sprintf("event %d arrived %v before it was sent", k, -lags[k]))
		}
		if k > 0 && e.SinceT0 < rec.EventList[k-1].SinceT0 {
			out = append(out, fmt.Sprintf("event %d timed at %v, before event %d at %v", k, e.SinceT0, k-1, rec.EventList[k-1].SinceT0))
		}
	}
	slices.Sort(lags)
	if med := medianDuration(lags); med > bound {
		out = append(out, fmt.Sprintf("median event lag %v, want at most %v (lags, sorted: %v)", med, bound, lags))
	}
	at := func(k int) time.Duration { return rec.EventList[k].SinceT0 }
	span := at(last) - at(first)
	for _, c := range []struct {
		name string
		got  *time.Duration
		want time.Duration
	}{
		{"ttft", rec.TTFT, at(first)},
		{"tpot_event", rec.TPOTEvent, span / time.Duration(len(textIdx)-1)},
		{"tpot_token", rec.TPOTToken, span / time.Duration(tokensAfterFirst)},
	} {
		if c.got == nil {
			out = append(out, "no "+c.name)
		} else if *c.got != c.want {
			out = append(out, fmt.Sprintf("%s = %v, want %v from the events' times", c.name, *c.got, c.want))
		}
	}
	if !rec.TPOTTokenExact {
		out = append(out, "tpot_token not exact; the simulator sent per-event token ids")
	}
	return out, firstLag
}
