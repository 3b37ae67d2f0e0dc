package chart

import (
	"math"
	"reflect"
	"testing"
)

func tickLabels(ts []Tick) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Label)
	}
	return out
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 10, []string{"0", "2", "4", "6", "8", "10"}},
		{0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{0, 300, []string{"0", "50", "100", "150", "200", "250", "300"}},
		{0, 70, []string{"0", "20", "40", "60"}},
		{0, 22.4, []string{"0", "5", "10", "15", "20"}},
		{0, 13, []string{"0", "2.5", "5", "7.5", "10", "12.5"}},
		{0.3, 9.7, []string{"2", "4", "6", "8"}},
		{-3, 3, []string{"-3", "-2", "-1", "0", "1", "2", "3"}},
		{1410, 1980, []string{"1500", "1600", "1700", "1800", "1900"}},
		{0.001, 0.0042, []string{"0.001", "0.002", "0.003", "0.004"}},
		{0.001, 0.0022, []string{"0.001", "0.0012", "0.0014", "0.0016", "0.0018", "0.002", "0.0022"}},
		{5, 5, []string{"5"}},
		{5, 4, []string{}},
		{math.NaN(), 1, []string{}},
		{0, math.Inf(1), []string{}},
	} {
		if got := tickLabels(NiceTicks(tc.lo, tc.hi)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NiceTicks(%g, %g) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestNiceTicksValues checks that the ticks are exact multiples of their step, so that a tick
// at zero is zero and not a rounding error's -1e-17.
func TestNiceTicksValues(t *testing.T) {
	ts := NiceTicks(-0.3, 0.3)
	want := []float64{-0.3, -0.2, -0.1, 0, 0.1, 0.2, 0.3}
	if len(ts) != len(want) {
		t.Fatalf("NiceTicks(-0.3, 0.3) gives %d ticks, want %d", len(ts), len(want))
	}
	for i, tk := range ts {
		if math.Abs(tk.Value-want[i]) > 1e-12 {
			t.Errorf("tick %d = %v, want %v", i, tk.Value, want[i])
		}
	}
	if ts[3].Value != 0 || math.Signbit(ts[3].Value) {
		t.Errorf("the middle tick is %v, want exactly 0", ts[3].Value)
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0.8, 20, []string{"1", "2", "5", "10", "20"}},
		{1, 16, []string{"1", "2", "5", "10"}},
		{1, 10000, []string{"1", "10", "100", "1000", "10000"}},
		{0.5, 2000, []string{"1", "10", "100", "1000"}},
		{0.02, 0.6, []string{"0.02", "0.05", "0.1", "0.2", "0.5"}},
		// No power of ten, and only one of 2 or 5 times one: round linear ticks instead.
		{3, 4.5, []string{"3", "3.25", "3.5", "3.75", "4", "4.25", "4.5"}},
		{0, 10, []string{}},
		{-1, 10, []string{}},
		{10, 1, []string{}},
	} {
		if got := tickLabels(LogTicks(tc.lo, tc.hi)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LogTicks(%g, %g) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestIntegerTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 4, []string{"0", "1", "2", "3", "4"}},
		{0, 9, []string{"0", "2", "4", "6", "8"}},
		{0, 30, []string{"0", "8", "16", "24"}},
		{0.5, 3.5, []string{"1", "2", "3"}},
		{0, 0.5, []string{"0"}},
	} {
		if got := tickLabels(IntegerTicks(tc.lo, tc.hi)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("IntegerTicks(%g, %g) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestFixedTicks(t *testing.T) {
	tk := FixedTicks([]Tick{{1, "1"}, {2, "2"}, {4, "4"}, {8, "8"}})
	if got, want := tickLabels(tk(1.5, 8)), []string{"2", "4", "8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FixedTicks on [1.5, 8] = %q, want %q", got, want)
	}
}

func TestFormatNumber(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {250, "250"}, {2.5, "2.5"}, {math.Copysign(0, -1), "0"}, {0.1 + 0.2, "0.3"}, {-1e-7, "0"},
		{-1.25, "-1.25"}, {1234567, "1234567"},
	} {
		v, want := tc.v, tc.want
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}
