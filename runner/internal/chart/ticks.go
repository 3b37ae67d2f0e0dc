package chart

import (
	"math"
	"strconv"
	"strings"
)

// Tick is a mark on an axis at Value, labelled with Label; an empty label marks a minor tick.
type Tick struct {
	Value float64
	Label string
}

// Ticker returns the ticks of an axis that runs from lo to hi.
type Ticker func(lo, hi float64) []Tick

// NiceTicks marks about six round values between lo and hi: steps of 1, 2, 2.5 or 5 times a
// power of ten, labelled without trailing zeros ("250", not "250.00").
func NiceTicks(lo, hi float64) []Tick {
	if !finite(lo) || !finite(hi) || !(hi > lo) {
		if finite(lo) && lo == hi {
			return []Tick{{Value: lo, Label: FormatNumber(lo)}}
		}
		return nil
	}
	step := niceStep((hi - lo) / 6)
	var ts []Tick
	first := math.Ceil(lo/step - 1e-9)
	for i := 0; ; i++ {
		v := (first + float64(i)) * step
		if v > hi+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, Tick{Value: v, Label: FormatNumber(v)})
	}
	return ts
}

// niceStep returns the smallest of 1, 2, 2.5, 5 and 10 times a power of ten that is at least raw.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw*(1-1e-12) {
			return m * mag
		}
	}
	return 10 * mag
}

// LogTicks marks the powers of ten between lo and hi on a logarithmic axis, and 2 and 5 times
// them as well when the axis spans fewer than three decades; when that still gives fewer than
// two labels, it falls back to NiceTicks. Both ends must be positive.
func LogTicks(lo, hi float64) []Tick {
	if !(lo > 0) || !(hi > lo) || !finite(hi) {
		return nil
	}
	mults := []float64{1}
	if math.Log10(hi/lo) < 3 {
		mults = []float64{1, 2, 5}
	}
	var ts []Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for _, m := range mults {
			v := m * p
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ts = append(ts, Tick{Value: v, Label: FormatNumber(v)})
			}
		}
	}
	if len(ts) < 2 {
		return NiceTicks(lo, hi)
	}
	return ts
}

// IntegerTicks marks whole numbers only, at most about six of them, in steps of a power of
// two: for axes that count things.
func IntegerTicks(lo, hi float64) []Tick {
	if !finite(lo) || !finite(hi) || hi < lo {
		return nil
	}
	step := 1.0
	for (hi-lo)/step > 6 {
		step *= 2
	}
	var ts []Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ts = append(ts, Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ts
}

// FixedTicks returns a ticker that marks exactly ts (those within the axis).
func FixedTicks(ts []Tick) Ticker {
	return func(lo, hi float64) []Tick {
		var out []Tick
		for _, t := range ts {
			if t.Value >= lo-1e-9*math.Abs(lo) && t.Value <= hi+1e-9*math.Abs(hi) {
				out = append(out, t)
			}
		}
		return out
	}
}

// NoTicks marks nothing.
func NoTicks(lo, hi float64) []Tick { return nil }

// FormatNumber formats v with at most six decimals and no trailing zeros.
func FormatNumber(v float64) string { return trimmed(v, 6) }

// trimmed formats v with at most decimals (at least one) decimals, no trailing zeros and no
// "-0".
func trimmed(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}
