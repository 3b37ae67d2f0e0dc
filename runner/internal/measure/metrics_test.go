package measure

import (
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

const ms = time.Millisecond

// ev builds an event at t milliseconds; text says whether it carries text; tokens < 0 means the
// count is unknown.
func ev(t float64, text bool, tokens int) record.Event {
	e := record.Event{SinceT0: time.Duration(t * float64(ms)), Text: text}
	if text {
		e.TextLen = 1
	}
	if tokens >= 0 {
		e.Tokens = record.Int(tokens)
	}
	return e
}

func TestComputeTiming(t *testing.T) {
	dur := func(v float64) *time.Duration { return record.Dur(time.Duration(v * float64(ms))) }
	tests := []struct {
		name       string
		events     []record.Event
		end        float64
		outTokens  *int
		want       Timing
		wantTPOTTk *time.Duration
	}{
		{
			name: "one token per event",
			// role chunk (no text), then 4 text events 10 ms apart, then a usage chunk.
			events: []record.Event{ev(5, false, 0), ev(50, true, 1), ev(60, true, 1), ev(70, true, 1), ev(80, true, 1), ev(81, false, 0)},
			end:    82,
			want: Timing{TTFT: dur(50), LastText: dur(80), E2E: dur(82), TPOTEvent: dur(10), TPOTToken: dur(10),
				TPOTTokenExact: true, ITLMedian: dur(10), ITLMax: dur(10), TextEvents: 4},
		},
		{
			name: "first event carries three tokens",
			// 3 tokens arrive at once, then 1 per event: 30 ms over 3 tokens after the first event.
			events: []record.Event{ev(50, true, 3), ev(60, true, 1), ev(70, true, 1), ev(80, true, 1)},
			end:    80,
			want: Timing{TTFT: dur(50), LastText: dur(80), E2E: dur(80), TPOTEvent: dur(10), TPOTToken: dur(10),
				TPOTTokenExact: true, ITLMedian: dur(10), ITLMax: dur(10), TextEvents: 4},
		},
		{
			name:   "two tokens per event",
			events: []record.Event{ev(50, true, 2), ev(70, true, 2), ev(90, true, 2)},
			end:    95,
			want: Timing{TTFT: dur(50), LastText: dur(90), E2E: dur(95), TPOTEvent: dur(20), TPOTToken: dur(10),
				TPOTTokenExact: true, ITLMedian: dur(20), ITLMax: dur(20), TextEvents: 3},
		},
		{
			name:   "end-of-sequence token without text is not counted",
			events: []record.Event{ev(50, true, 1), ev(60, true, 1), ev(70, true, 1), ev(75, false, 1)},
			end:    76,
			want: Timing{TTFT: dur(50), LastText: dur(70), E2E: dur(76), TPOTEvent: dur(10), TPOTToken: dur(10),
				TPOTTokenExact: true, ITLMedian: dur(10), ITLMax: dur(10), TextEvents: 3},
		},
		{
			name:   "a token split over two events: text without a new token",
			events: []record.Event{ev(50, true, 1), ev(60, true, 1), ev(61, true, 0), ev(70, true, 1)},
			end:    70,
			want: Timing{TTFT: dur(50), LastText: dur(70), E2E: dur(70), TPOTEvent: dur(20.0 / 3), TPOTToken: dur(10),
				TPOTTokenExact: true, ITLMedian: dur(9), ITLMax: dur(10), TextEvents: 4},
		},
		{
			name:      "no per-event counts: output tokens minus one",
			events:    []record.Event{ev(50, true, -1), ev(60, true, -1), ev(90, true, -1)},
			end:       91,
			outTokens: record.Int(5),
			want: Timing{TTFT: dur(50), LastText: dur(90), E2E: dur(91), TPOTEvent: dur(20), TPOTToken: dur(10),
				TPOTTokenExact: false, ITLMedian: dur(20), ITLMax: dur(30), TextEvents: 3},
		},
		{
			name:   "no per-event counts and no total: no tpot_token",
			events: []record.Event{ev(50, true, -1), ev(60, true, -1)},
			end:    60,
			want:   Timing{TTFT: dur(50), LastText: dur(60), E2E: dur(60), TPOTEvent: dur(10), ITLMedian: dur(10), ITLMax: dur(10), TextEvents: 2},
		},
		{
			name:   "one text event: no tpot at all",
			events: []record.Event{ev(5, false, 0), ev(50, true, 1), ev(51, false, 0)},
			end:    52,
			want:   Timing{TTFT: dur(50), LastText: dur(50), E2E: dur(52), TextEvents: 1},
		},
		{
			name:   "no text events",
			events: []record.Event{ev(5, false, 0), ev(6, false, 0)},
			end:    7,
			want:   Timing{E2E: dur(7)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeTiming(tt.events, time.Duration(tt.end*float64(ms)), tt.outTokens)
			check := func(field string, got, want *time.Duration) {
				t.Helper()
				switch {
				case got == nil && want == nil:
				case got == nil || want == nil:
					t.Errorf("%s = %v, want %v", field, fmtDur(got), fmtDur(want))
				case absDur(*got-*want) > time.Microsecond:
					t.Errorf("%s = %v, want %v", field, *got, *want)
				}
			}
			check("ttft", got.TTFT, tt.want.TTFT)
			check("last_text", got.LastText, tt.want.LastText)
			check("e2e", got.E2E, tt.want.E2E)
			check("tpot_event", got.TPOTEvent, tt.want.TPOTEvent)
			check("tpot_token", got.TPOTToken, tt.want.TPOTToken)
			check("itl_median", got.ITLMedian, tt.want.ITLMedian)
			check("itl_max", got.ITLMax, tt.want.ITLMax)
			if got.TPOTTokenExact != tt.want.TPOTTokenExact {
				t.Errorf("tpot_token exact = %v, want %v", got.TPOTTokenExact, tt.want.TPOTTokenExact)
			}
			if got.TextEvents != tt.want.TextEvents {
				t.Errorf("text events = %d, want %d", got.TextEvents, tt.want.TextEvents)
			}
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "<missing>"
	}
	return d.String()
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
