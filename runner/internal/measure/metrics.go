package measure

import (
	"slices"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Timing holds what the metric definitions of docs/metrics.md compute from one stream's events.
type Timing struct {
	TTFT, LastText, E2E  *time.Duration
	TPOTEvent, TPOTToken *time.Duration
	TPOTTokenExact       bool
	ITLMedian, ITLMax    *time.Duration
	TextEvents           int
}

// ComputeTiming applies the normative metric definitions to the events of one stream. end is the
// end of the response stream relative to t0. outputTokens is the best total count available
// (nil when none); it is used for tpot_token only when the events carry no per-event counts.
//
// tpot_token's denominator is the number of tokens generated after the first text event, up to
// and including the last text event. With per-event counts that number is exact: tokens carried
// by the first text event (a first event of three tokens) and tokens after the last text event
// (an end-of-sequence token with no text) are not counted. Without them it is outputTokens − 1,
// and TPOTTokenExact is false.
func ComputeTiming(events []record.Event, end time.Duration, outputTokens *int) Timing {
	var t Timing
	t.E2E = record.Dur(end)
	first, last := -1, -1
	for i, e := range events {
		if !e.Text {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		t.TextEvents++
	}
	if first < 0 {
		return t
	}
	t.TTFT = record.Dur(events[first].SinceT0)
	t.LastText = record.Dur(events[last].SinceT0)
	if t.TextEvents < 2 {
		return t
	}
	span := events[last].SinceT0 - events[first].SinceT0
	t.TPOTEvent = record.Dur(span / time.Duration(t.TextEvents-1))

	gaps := make([]time.Duration, 0, t.TextEvents-1)
	prev := events[first].SinceT0
	for _, e := range events[first+1 : last+1] {
		if e.Text {
			gaps = append(gaps, e.SinceT0-prev)
			prev = e.SinceT0
		}
	}
	slices.Sort(gaps)
	t.ITLMax = record.Dur(gaps[len(gaps)-1])
	t.ITLMedian = record.Dur(medianDuration(gaps))

	if perEvent(events) {
		n := 0
		for _, e := range events[first+1 : last+1] {
			n += *e.Tokens
		}
		if n > 0 {
			t.TPOTToken = record.Dur(span / time.Duration(n))
			t.TPOTTokenExact = true
		}
		return t
	}
	if outputTokens != nil && *outputTokens > 1 {
		t.TPOTToken = record.Dur(span / time.Duration(*outputTokens-1))
	}
	return t
}

// perEvent reports whether every event carries a token count.
func perEvent(events []record.Event) bool {
	for _, e := range events {
		if e.Tokens == nil {
			return false
		}
	}
	return len(events) > 0
}

// medianDuration returns the median of sorted, non-empty ds; for an even count it is the mean of
// the two middle values.
func medianDuration(ds []time.Duration) time.Duration {
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}
