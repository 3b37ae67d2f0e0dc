package compare

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		in   string
		want []Threshold
		err  string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"ttft:+10%,tpot_token:+5%", []Threshold{{"ttft_ms", Up, 10}, {"tpot_token_ms", Up, 5}}, ""},
		{"ttft_ms:10%", []Threshold{{"ttft_ms", Up, 10}}, ""},
		{" E2E : -2.5% , output_tokens:±1%", []Threshold{{"e2e_ms", Down, 2.5}, {"output_tokens", Either, 1}}, ""},
		{"text_events:+-0%", []Threshold{{"text_events", Either, 0}}, ""},
		{"itl_median:+0.25%", []Threshold{{"itl_median_ms", Up, 0.25}}, ""},
		{"tpot_event:5.%", []Threshold{{"tpot_event_ms", Up, 5}}, ""},
		{"ttft", nil, `threshold "ttft": want METRIC:LIMIT`},
		{"failed:+5%", []Threshold{{Metric: "failed", Direction: Up, Percent: 5}}, ""},
		{"ttfb:+10%", nil, `unknown metric "ttfb" (want one of ttft, tpot_event, tpot_token, e2e, itl_median, output_tokens, text_events, send_lag, server_ttft, client_overhead, failed, goodput, throughput, rate)`},
		{"ttft:+10", nil, "the limit must be a percentage"},
		{"ttft:+10ms", nil, "the limit must be a percentage"},
		{"ttft:++10%", nil, `"+10" is not a number of percent`},
		{"ttft:+%", nil, `"" is not a number of percent`},
		{"ttft:+1e2%", nil, `"1e2" is not a number of percent`},
		{"ttft:+.5%", nil, `".5" is not a number of percent`},
		{"ttft:+NaN%", nil, "not a number of percent"},
		{"ttft:+1.2.3%", nil, "not a number of percent"},
		{"ttft:+10%,ttft_ms:+5%", nil, "ttft_ms has a threshold already"},
		{"ttft:+10%,", nil, `threshold "": want METRIC:LIMIT`},
	}
	for _, tt := range tests {
		got, err := ParseThresholds(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseThresholds(%q): error %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseThresholds(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestThresholdExceeded(t *testing.T) {
	for _, tt := range []struct {
		th     Threshold
		change float64
		want   bool
	}{
		{Threshold{"ttft_ms", Up, 10}, 10.01, true},
		{Threshold{"ttft_ms", Up, 10}, 10, false}, // "by more than"
		{Threshold{"ttft_ms", Up, 10}, -50, false},
		{Threshold{"ttft_ms", Up, 0}, 0.001, true},
		{Threshold{"ttft_ms", Up, 0}, 0, false},
		{Threshold{"e2e_ms", Down, 5}, -5.5, true},
		{Threshold{"e2e_ms", Down, 5}, -5, false},
		{Threshold{"e2e_ms", Down, 5}, 50, false},
		{Threshold{"output_tokens", Either, 1}, -1.5, true},
		{Threshold{"output_tokens", Either, 1}, 1.5, true},
		{Threshold{"output_tokens", Either, 1}, 0.5, false},
		{Threshold{"output_tokens", Either, 1}, math.NaN(), false},
		{Threshold{"ttft_ms", Up, 1}, math.NaN(), false},
	} {
		if got := tt.th.Exceeded(tt.change); got != tt.want {
			t.Errorf("%s exceeded by %v: %v, want %v", tt.th, tt.change, got, tt.want)
		}
	}
	if s := (Threshold{"output_tokens", Either, 2.5}).String(); s != "output_tokens:±2.5%" {
		t.Errorf("String() = %q", s)
	}
}

func TestParseMetric(t *testing.T) {
	for in, want := range map[string]string{"ttft": "ttft_ms", "TTFT_MS": "ttft_ms", "tpot_token": "tpot_token_ms",
		"e2e": "e2e_ms", "output_tokens": "output_tokens", " text_events ": "text_events", "itl_median": "itl_median_ms"} {
		if got, err := ParseMetric(in); err != nil || got != want {
			t.Errorf("ParseMetric(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "output_tokens_ms", "ttft_s", "tpot"} {
		if _, err := ParseMetric(bad); err == nil {
			t.Errorf("ParseMetric(%q): no error", bad)
		}
	}
}

// FuzzParseThresholds checks that whatever ParseThresholds accepts prints back into rules that
// parse to the same thresholds.
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"ttft:+10%,tpot_token:+5%", "e2e:-2.5%", "output_tokens:±1%", "text_events:+-0%", "x", "ttft:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ParseThresholds(in)
		if err != nil {
			return
		}
		var rules []string
		for _, th := range ts {
			if !(th.Percent >= 0) || math.IsInf(th.Percent, 0) {
				t.Fatalf("%q gave the threshold %+v", in, th)
			}
			rules = append(rules, th.String())
		}
		again, err := ParseThresholds(strings.Join(rules, ","))
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", in, strings.Join(rules, ","), err)
		}
		if !reflect.DeepEqual(again, ts) {
			t.Fatalf("%q: %+v printed and parsed gives %+v", in, ts, again)
		}
	})
}
