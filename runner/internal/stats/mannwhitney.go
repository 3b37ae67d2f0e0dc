package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Method names how a Mann-Whitney p-value was computed.
type Method string

// The methods of MannWhitneyU.
const (
	// MethodExact: the exact null distribution of U, counted by dynamic programming. Used when
	// the samples share no value and both are smaller than ExactLimit.
	MethodExact Method = "exact"
	// MethodNormal: the normal approximation of U with the variance corrected for ties and a
	// continuity correction of ½. Used when values are tied or a sample has ExactLimit values or
	// more.
	MethodNormal Method = "normal"
)

// ExactLimit is the sample size from which MannWhitneyU uses the normal approximation even
// without ties. Below it, on both sides, the exact distribution is used (R's wilcox.test draws
// the same line, so its p-values can be checked against R's).
const ExactLimit = 50

// MannWhitney is the result of a two-sided Mann-Whitney U test (also called the Wilcoxon
// rank-sum test) of two independent samples x and y. The null hypothesis is that a value drawn
// from x is as likely to be larger than one drawn from y as smaller; the test assumes nothing
// about the shape of either distribution.
type MannWhitney struct {
	N1, N2 int // sizes of x and y
	// U counts the pairs (x[i], y[j]) with x[i] > y[j], plus half the pairs with x[i] = y[j].
	// It runs from 0 (every x below every y) to N1·N2 (every x above every y); R's wilcox.test
	// reports it as W.
	U      float64
	P      float64 // two-sided p-value, in (0, 1]
	Method Method  // how P was computed
	Ties   bool    // whether any value occurs more than once in the pooled sample
}

// MannWhitneyU runs a two-sided Mann-Whitney U test of x against y.
//
// Without ties and with both samples smaller than ExactLimit, P is exact: twice the smaller
// tail of U's null distribution at the observed U, capped at 1. Otherwise P comes from the
// normal approximation: U has mean N1·N2/2 and variance N1·N2/12 · ((N+1) − Σ(t³−t)/(N(N−1)))
// for N = N1+N2 and t the size of each group of tied values, and z = (|U − N1·N2/2| − ½)/σ
// (not below 0) gives P = 2·(1 − Φ(z)). These are the p-values of R's wilcox.test(x, y) with
// its defaults, except when every value is the same: σ is then 0, R reports NaN, and P is 1 (no
// evidence of a difference).
//
// It returns an error when either sample is empty or holds a value that is not finite.
func MannWhitneyU(x, y []float64) (MannWhitney, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MannWhitney{}, fmt.Errorf("mann-whitney: empty sample (n1=%d, n2=%d)", n1, n2)
	}
	type obs struct {
		v     float64
		first bool
	}
	pool := make([]obs, 0, n1+n2)
	for _, v := range x {
		pool = append(pool, obs{v, true})
	}
	for _, v := range y {
		pool = append(pool, obs{v, false})
	}
	for _, o := range pool {
		if math.IsNaN(o.v) || math.IsInf(o.v, 0) {
			return MannWhitney{}, errors.New("mann-whitney: sample holds a value that is not finite")
		}
	}
	sort.Slice(pool, func(i, j int) bool { return pool[i].v < pool[j].v })

	// Rank the pooled sample, giving each group of tied values the mean of its ranks, and
	// collect Σ(t³−t) over the groups for the variance correction.
	var rankSum1, tieSum float64
	ties := false
	for i := 0; i < len(pool); {
		j := i
		for j < len(pool) && pool[j].v == pool[i].v {
			j++
		}
		t := float64(j - i)
		if t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		mid := float64(i+1+j) / 2 // mean of the 1-based ranks i+1 .. j
		for k := i; k < j; k++ {
			if pool[k].first {
				rankSum1 += mid
			}
		}
		i = j
	}
	u := rankSum1 - float64(n1)*float64(n1+1)/2
	res := MannWhitney{N1: n1, N2: n2, U: u, Ties: ties}
	if !ties && n1 < ExactLimit && n2 < ExactLimit {
		res.Method = MethodExact
		res.P = exactTwoSided(n1, n2, int(math.Round(u)))
		return res, nil
	}
	res.Method = MethodNormal
	res.P = normalTwoSided(n1, n2, u, tieSum)
	return res, nil
}

// MannWhitneyMinP returns the smallest two-sided p-value that MannWhitneyU can return for
// samples of sizes n1 and n2 without ties: the p-value of two samples that do not overlap at
// all. Where it is not below a significance level alpha, no data of these sizes can show a
// difference at alpha, and the samples are too small for the test. In the exact range it is
// 2/C(n1+n2, n1) (capped at 1): 0.1 for 3 and 3 values, 2/70 for 4 and 4. It is 1 when a sample
// is empty.
func MannWhitneyMinP(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	if n1 < ExactLimit && n2 < ExactLimit {
		return math.Min(1, 2/choose(n1+n2, n1))
	}
	return normalTwoSided(n1, n2, 0, 0)
}

// MannWhitneyMinN returns the smallest n for which two samples of n values each can reach a
// p-value below alpha (4 for alpha 0.05, 5 for 0.01), or -1 when alpha is not in (0, 1).
func MannWhitneyMinN(alpha float64) int {
	if !(alpha > 0 && alpha < 1) {
		return -1
	}
	for n := 1; ; n++ {
		if MannWhitneyMinP(n, n) < alpha {
			return n
		}
	}
}

// choose returns C(n, k). Each step's product is the whole number C(n−k+i, i), so the result is
// exact while it stays below 2⁵³ and correctly rounded to about 16 digits beyond.
func choose(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// normalTwoSided returns the two-sided p-value of U under the normal approximation with the tie
// correction tieSum = Σ(t³−t) and a continuity correction of ½.
func normalTwoSided(n1, n2 int, u, tieSum float64) float64 {
	m, n := float64(n1), float64(n2)
	N := m + n
	variance := m * n / 12 * ((N + 1) - tieSum/(N*(N-1)))
	if !(variance > 0) {
		return 1
	}
	z := (math.Abs(u-m*n/2) - 0.5) / math.Sqrt(variance)
	if z <= 0 {
		return 1
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// exactTwoSided returns the exact two-sided p-value of the observed U for samples of sizes n1
// and n2 without ties: twice the probability of a U at least as far from the centre on the
// observed side, capped at 1.
func exactTwoSided(n1, n2, u int) float64 {
	cdf := uCDF(n1, n2)
	total := n1 * n2
	// P(U ≥ u) = P(U ≤ n1·n2 − u) by the symmetry of the distribution.
	lower := cdf[min(u, total-u)]
	return math.Min(1, 2*lower)
}

// uCDFs caches the null distributions of U by sample sizes (smaller first), since a
// comparison tests many metrics with the same numbers of values.
var uCDFs = struct {
	sync.Mutex
	m map[[2]int][]float64
}{m: map[[2]int][]float64{}}

// uCDF returns P(U ≤ u) for u = 0 .. n1·n2 under the null hypothesis without ties. The
// distribution depends only on the two sizes, not on which sample is which.
func uCDF(n1, n2 int) []float64 {
	if n1 > n2 {
		n1, n2 = n2, n1
	}
	key := [2]int{n1, n2}
	uCDFs.Lock()
	defer uCDFs.Unlock()
	if c, ok := uCDFs.m[key]; ok {
		return c
	}
	counts := uCounts(n1, n2)
	var total float64
	for _, c := range counts {
		total += c
	}
	cdf := make([]float64, len(counts))
	var acc float64
	for i, c := range counts {
		acc += c
		cdf[i] = acc / total
	}
	uCDFs.m[key] = cdf
	return cdf
}

// uCounts returns, for u = 0 .. m·n, how many of the C(m+n, m) equally likely orderings of m
// values of one sample and n of the other give U = u, where U counts the pairs in which the
// first sample's value is the larger.
//
// It counts by dynamic programming over f(i, j), the counts for i and j values. Look at the
// largest of the i+j values: if it belongs to the first sample it is larger than all j values of
// the second, adding j to U, and the rest is an ordering of i−1 and j values; if it belongs to
// the second, it adds nothing and the rest is an ordering of i and j−1 values. So
// f(i, j)[u] = f(i−1, j)[u−j] + f(i, j−1)[u], with f(i, 0) and f(0, j) all at u = 0. The counts
// are whole numbers held in float64: exact up to 2⁵³, and beyond that (from about 28 values a
// side) rounded in the 16th digit, which the p-values do not notice.
func uCounts(m, n int) []float64 {
	// prev[j] is f(i−1, j); cur[j] is f(i, j), of length i·j+1.
	prev := make([][]float64, n+1)
	for j := range prev {
		prev[j] = []float64{1} // f(0, j): U is 0
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1} // f(i, 0)
		for j := 1; j <= n; j++ {
			f := make([]float64, i*j+1)
			copy(f, cur[j-1]) // the largest value is of the second sample
			for u, c := range prev[j] {
				f[u+j] += c // the largest value is of the first sample
			}
			cur[j] = f
		}
		prev = cur
	}
	return prev[n]
}
