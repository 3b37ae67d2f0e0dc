package stats

import "math"

// MedianCI returns a distribution-free confidence interval for the median of a sorted sample:
// the order statistics x[l−1] and x[n−l] (1-based ranks l and n−l+1), with l the largest rank
// for which P(B < l) ≤ (1−level)/2 where B ~ Binomial(n, ½) counts the values below the true
// median. achieved is the interval's exact coverage 1 − 2·P(B < l), which is at least level.
// ok is false when n is too small for any such interval; see MinSamplesForCI.
func MedianCI(sorted []float64, level float64) (lo, hi, achieved float64, ok bool) {
	n := len(sorted)
	l, tail := medianRank(n, level)
	if l == 0 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	return sorted[l-1], sorted[n-l], 1 - 2*tail, true
}

// MinSamplesForCI returns the smallest sample size for which MedianCI has an interval at
// level: 6 for 0.95, 8 for 0.99.
func MinSamplesForCI(level float64) int {
	for n := 1; n < 1<<16; n++ {
		if l, _ := medianRank(n, level); l > 0 {
			return n
		}
	}
	return -1
}

// medianRank returns the largest 1-based rank l with P(B ≤ l−1) ≤ (1−level)/2 for B ~
// Binomial(n, ½), and that tail probability; l is 0 when even P(B = 0) is too large.
func medianRank(n int, level float64) (l int, tail float64) {
	if n <= 0 || !(level > 0 && level < 1) {
		return 0, 0
	}
	alpha := (1 - level) / 2
	var cdf float64
	// The loop stops well before the middle: the tail below the median never passes ½.
	for k := 0; k < n; k++ {
		next := cdf + binomHalf(n, k)
		if next > alpha*(1+1e-12) {
			break
		}
		cdf = next
		l = k + 1
	}
	if l > n/2 {
		l = n / 2
	}
	return l, cdf
}

// binomHalf returns P(B = k) for B ~ Binomial(n, ½), computed in log space so that large n
// neither overflows nor underflows early.
func binomHalf(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(a - b - c - float64(n)*math.Ln2)
}
