// Package stats summarises samples of a metric: order statistics, moments and a
// distribution-free confidence interval for the median, with warnings beside the numbers
// instead of errors when the sample is too small for one of them.
//
// Percentiles use linear interpolation between closest ranks (Hyndman and Fan's definition 7,
// the default of NumPy, R and spreadsheet PERCENTILE.INC): for sorted x[0..n-1] and p in (0,1],
// the rank is h = p·(n−1) and the value is x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]). The median
// is the middle value, or the mean of the two middle values. The standard deviation is the
// sample one (divisor n−1).
package stats

import (
	"fmt"
	"math"
	"sort"
	"strings"

	mstats "github.com/montanaflynn/stats"
)

// Level is the confidence level of the median interval that Summarize computes.
const Level = 0.95

// Summary describes one sample. A value that the sample cannot support (the spread of one
// value, an interval from too few values, anything of an empty sample) is NaN, and Warnings
// says why; encoders write NaN as a missing value, never as a number.
type Summary struct {
	N      int     // number of finite values summarised
	Min    float64 // smallest value
	Median float64 // middle value (mean of the two middle values when N is even)
	P95    float64 // 95th percentile, linear interpolation between closest ranks
	P99    float64 // 99th percentile, same method
	Max    float64 // largest value
	Mean   float64 // arithmetic mean
	Stddev float64 // sample standard deviation (divisor N−1)

	// MedianCILow and MedianCIHigh bound the median with at least Level confidence; they are
	// order statistics of the sample, so the interval assumes nothing about the distribution.
	MedianCILow  float64
	MedianCIHigh float64
	// MedianCILevel is the interval's exact coverage, at least Level (for example 0.978515625
	// for ten values), or NaN when there is no interval.
	MedianCILevel float64

	Warnings []string // what the numbers cannot be trusted for, in plain words
}

// Summarize describes xs. Non-finite values (NaN, ±Inf) are left out with a warning. It never
// fails: a sample too small for some figure leaves that figure NaN and says so in Warnings.
func Summarize(xs []float64) Summary {
	nan := math.NaN()
	s := Summary{Min: nan, Median: nan, P95: nan, P99: nan, Max: nan, Mean: nan, Stddev: nan,
		MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan}

	sorted := make([]float64, 0, len(xs))
	var dropped int
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			dropped++
			continue
		}
		sorted = append(sorted, x)
	}
	sort.Float64s(sorted)
	s.N = len(sorted)
	if dropped > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d non-finite values left out", dropped))
	}
	if s.N == 0 {
		s.Warnings = append(s.Warnings, "no samples")
		return s
	}

	data := mstats.Float64Data(sorted)
	// The library's errors only signal an empty input or a percent out of (0,100], which the
	// checks above rule out; a NaN result would still be reported as missing.
	s.Min, _ = mstats.Min(data)
	s.Max, _ = mstats.Max(data)
	s.Mean, _ = mstats.Mean(data)
	s.Median, _ = mstats.Median(data)
	s.P95, _ = mstats.Percentile(data, 95)
	s.P99, _ = mstats.Percentile(data, 99)
	if s.N >= 2 {
		s.Stddev, _ = mstats.StandardDeviationSample(data)
	} else {
		s.Warnings = append(s.Warnings, "one sample: no spread")
	}

	if lo, hi, level, ok := MedianCI(sorted, Level); ok {
		s.MedianCILow, s.MedianCIHigh, s.MedianCILevel = lo, hi, level
	} else {
		s.Warnings = append(s.Warnings, fmt.Sprintf("n=%d: "+tooFewForCI+" %g%% median interval (need %d)",
			s.N, Level*100, MinSamplesForCI(Level)))
	}

	// With linear interpolation, a percentile whose rank reaches the second-largest value is
	// only a blend of the two largest samples; say so rather than let it read as a tail.
	if tailBlended(s.N, 0.95) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("n=%d: %s", s.N, bothBlended))
	} else if tailBlended(s.N, 0.99) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("n=%d: %s", s.N, p99Blended))
	}
	return s
}

// The texts of Summarize's warnings that Advice knows.
const (
	bothBlended = "p95 and p99 lie between the two largest values"
	p99Blended  = "p99 lies between the two largest values"
	tooFewForCI = "too few samples for a"
)

// tailBlended reports whether, among n values, percentile p (a fraction) is interpolated
// between the two largest, as Summarize computes percentiles.
func tailBlended(n int, p float64) bool { return n >= 2 && int(p*float64(n-1)) >= n-2 }

// MinSamplesForTail returns the smallest number of values for which percentile p (a fraction)
// lies below the second largest value: 22 for p95, 102 for p99.
func MinSamplesForTail(p float64) int {
	n := 2
	for tailBlended(n, p) {
		n++
	}
	return n
}

// Advice says what would answer a warning of Summarize: how many measured requests per config
// make a percentile a tail of its own, or give the median its interval. It is empty for a
// warning that more requests do not answer.
func Advice(warning string) string {
	switch {
	case strings.HasSuffix(warning, bothBlended):
		return fmt.Sprintf("%d measured requests per config make p95 a tail of its own, %d make p99 one",
			MinSamplesForTail(0.95), MinSamplesForTail(0.99))
	case strings.HasSuffix(warning, p99Blended):
		return fmt.Sprintf("%d measured requests per config make p99 a tail of its own", MinSamplesForTail(0.99))
	case strings.Contains(warning, tooFewForCI):
		return fmt.Sprintf("%d measured requests per config give the median its %g%% interval", MinSamplesForCI(Level), Level*100)
	}
	return ""
}
