package measure

import (
	"context"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// lateBound bounds how late, under load, the client may timestamp an event after the simulator
// sent it. With one stream the lag is tens of microseconds (see tolerance); with 16 streams
// whose events the simulator sends at the same moments (every stream decodes in lockstep, the
// way one batch of a real server does), an event also waits for the reader goroutines of the
// events ahead of it, about 10 µs each, and on 2 shared cores for a thread that another
// process holds: a time slice of the kernel's scheduler is a few milliseconds, so a few of
// them fit in the bound. On a machine running its test suite, other test binaries included,
// the whole client process has been seen to stall for 23 ms at a load average of 8 on 2 cores,
// every stream at once: the bound is 50 ms, and the decode step above it, so that a timing
// one step off is still caught.
//
// Every check follows from "each event's lag lies in [0, lateBound]", since t0 is the client's
// own clock on both sides of each comparison:
//   - ttft is off by the first text event's lag: at most lateBound;
//   - tpot_event is off by the difference of the last and first text events' lags over the
//     gaps between them: at most lateBound/(text events − 1);
//   - tpot_token likewise over the tokens after the first text event.
//
// A timing taken in the wrong place is off by at least one decode step (truthDecode, above
// lateBound) in ttft, and by about a decode step per gap in tpot when every event is timed
// together; so the bound still catches what TestGroundTruth catches.
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
			for i, rec := range recs {
				if rec.Status != record.StatusOK {
					t.Fatalf("request %d: status %q: %s %s", i, rec.Status, rec.ErrorClass, rec.Error)
				}
				most = max(most, rec.InFlight)
				checkTruth(t, i, rec, stamps(t, tee.body(i)))
			}
			// The load was real: the streams overlapped.
			if most != streams {
				t.Errorf("at most %d requests in flight, want %d", most, streams)
			}
		})
	}
}

// checkTruth compares request i's metrics with the simulator's stamps on its events.
func checkTruth(t *testing.T, i int, rec record.Request, gt []truth) {
	t.Helper()
	if len(gt) != rec.Events || len(gt) != len(rec.EventList) {
		t.Fatalf("request %d: client saw %d events, server sent %d", i, rec.Events, len(gt))
	}
	var textIdx []int
	for k, g := range gt {
		if g.text {
			textIdx = append(textIdx, k)
		}
	}
	if len(textIdx) < 2 {
		t.Fatalf("request %d: %d text events, want at least 2", i, len(textIdx))
	}
	first, last := textIdx[0], textIdx[len(textIdx)-1]
	tokensAfterFirst := 0
	for _, g := range gt[first+1 : last+1] {
		tokensAfterFirst += g.tokens
	}
	for k, e := range rec.EventList {
		lag := rec.Start.Add(e.SinceT0).Sub(gt[k].sent)
		// Two readings of the wall clock in one process cannot disagree by more than the
		// drift between its wall and monotonic readings over one request: far below 1 ms.
		if lag < -time.Millisecond || lag > lateBound {
			t.Errorf("request %d: event %d arrived %v after it was sent, want [0, %v]", i, k, lag, lateBound)
		}
	}
	t0 := rec.Start
	span := gt[last].sent.Sub(gt[first].sent)
	checks := []struct {
		name      string
		got       *time.Duration
		want, tol time.Duration
	}{
		{"ttft", rec.TTFT, gt[first].sent.Sub(t0), lateBound},
		{"tpot_event", rec.TPOTEvent, span / time.Duration(len(textIdx)-1), lateBound / time.Duration(len(textIdx)-1)},
		{"tpot_token", rec.TPOTToken, span / time.Duration(tokensAfterFirst), lateBound / time.Duration(tokensAfterFirst)},
	}
	for _, c := range checks {
		if c.got == nil {
			t.Errorf("request %d: no %s", i, c.name)
			continue
		}
		// ttft's error is one event's lag, never negative; the tpots' may go either way.
		lo := -c.tol
		if c.name == "ttft" {
			lo = -time.Millisecond
		}
		if d := *c.got - c.want; d < lo || d > c.tol {
			t.Errorf("request %d: %s = %v, ground truth %v (off by %v, tolerance [%v, %v])", i, c.name, *c.got, c.want, d, lo, c.tol)
		}
	}
	if !rec.TPOTTokenExact {
		t.Errorf("request %d: tpot_token not exact; the simulator sent per-event token ids", i)
	}
}
