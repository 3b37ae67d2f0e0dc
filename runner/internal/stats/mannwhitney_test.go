package stats

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

// permeability is the example of R's ?wilcox.test (Hollander and Wolfe, permeability constants
// of the human chorioamniotic membrane at term (x) and between 12 and 26 weeks (y)); R documents
// W = 35 and a one-sided p-value of 0.1272 for it.
var permeabilityX = []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
var permeabilityY = []float64{1.15, 0.88, 0.90, 0.74, 1.21}

// mod returns (1..n)·a mod p + off: distinct, scrambled, reproducible values.
func mod(n, a, p int, off float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(((i+1)*a)%p) + off
	}
	return xs
}

func span(from, to float64) []float64 {
	var xs []float64
	for v := from; v <= to; v++ {
		xs = append(xs, v)
	}
	return xs
}

func rep(v float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

// TestMannWhitneyUReference checks U and p against values computed by hand and against R 4.2.2's
// wilcox.test(x, y) (two-sided, exact where R is exact, correct = TRUE), printed with
// format(p, digits = 17).
func TestMannWhitneyUReference(t *testing.T) {
	tests := []struct {
		name   string
		x, y   []float64
		u, p   float64
		method Method
		ties   bool
	}{
		// By hand: 2 values a side have C(4,2) = 6 orderings with U = 0,1,2,2,3,4; U = 0 has
		// probability 1/6 in each tail.
		{"1,2 vs 3,4", []float64{1, 2}, []float64{3, 4}, 0, 1.0 / 3, MethodExact, false},
		// By hand: U = 1; P(U ≤ 1) = 2/6, doubled.
		{"1,3 vs 2,4", []float64{1, 3}, []float64{2, 4}, 1, 2.0 / 3, MethodExact, false},
		// By hand: the only ordering of 20 with U = 0; 2/20.
		{"1,2,3 vs 4,5,6", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1, MethodExact, false},
		// By hand: x above all three y, U = 3; P(U ≥ 3) = 1/4, doubled.
		{"5 vs 1,2,3", []float64{5}, []float64{1, 2, 3}, 3, 0.5, MethodExact, false},
		// R: W = 35, p-value = 0.2544122544122544 (the documented one-sided 0.1272, doubled).
		{"permeability", permeabilityX, permeabilityY, 35, 0.2544122544122544, MethodExact, false},
		// R: W = 741, p-value = 0.00095957471529891725 (exact, both samples of 49).
		{"49 vs 49 shifted", span(1, 49), mod(49, 1, 1000, 10.5), 741, 0.00095957471529891725, MethodExact, false},
		// R: W = 0, p-value = 1.4508889103849688e-11 (= 2/C(40,20)).
		{"1..20 vs 21..40", span(1, 20), span(21, 40), 0, 1.4508889103849688e-11, MethodExact, false},
		// R: W = 3.5, p-value = 0.012999854364387303 (normal, tie and continuity corrections).
		{"ties", []float64{1, 2, 2, 3, 3, 3, 4}, []float64{3, 4, 4, 5, 5, 6}, 3.5, 0.012999854364387303, MethodNormal, true},
		// R: W = 1719, p-value = 0.70132952182731789 (normal: 60 values are past the exact range).
		{"60 vs 55", mod(60, 37, 101, 0.5), mod(55, 53, 97, 3.25), 1719, 0.70132952182731789, MethodNormal, false},
		// R: W = 50, p-value = 1. Token counts: mostly equal, one lower and one higher.
		{"token counts", rep(64, 10), append(rep(64, 8), 63, 65), 50, 1, MethodNormal, true},
		// R: W = 100, p-value = 1.5937911688066268e-05. Every count halved.
		{"token counts halved", rep(64, 10), rep(32, 10), 100, 1.5937911688066268e-05, MethodNormal, true},
		// R reports NaN here (σ = 0); this test reports no evidence of a difference.
		{"all equal", rep(5, 3), rep(5, 4), 6, 1, MethodNormal, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MannWhitneyU(tt.x, tt.y)
			if err != nil {
				t.Fatal(err)
			}
			if got.N1 != len(tt.x) || got.N2 != len(tt.y) {
				t.Errorf("N1, N2 = %d, %d, want %d, %d", got.N1, got.N2, len(tt.x), len(tt.y))
			}
			if got.U != tt.u {
				t.Errorf("U = %v, want %v", got.U, tt.u)
			}
			if got.Method != tt.method {
				t.Errorf("Method = %s, want %s", got.Method, tt.method)
			}
			if math.Abs(got.P-tt.p) > 1e-12*math.Max(tt.p, 1e-300) && math.Abs(got.P-tt.p) > 1e-15 {
				t.Errorf("P = %.17g, want %.17g", got.P, tt.p)
			}
			if got.Ties != tt.ties {
				t.Errorf("Ties = %v, want %v", got.Ties, tt.ties)
			}
		})
	}
}

// TestMannWhitneyUCountsBruteForce checks the dynamic programme against an enumeration of every
// ordering of m values of one sample and n of the other.
func TestMannWhitneyUCountsBruteForce(t *testing.T) {
	for m := 1; m <= 7; m++ {
		for n := 1; n <= 7; n++ {
			want := make([]float64, m*n+1)
			// Bit k of mask set: the (k+1)-th smallest value is of the first sample.
			for mask := uint(0); mask < 1<<(m+n); mask++ {
				if bits.OnesCount(mask) != m {
					continue
				}
				u, seconds := 0, 0
				for k := 0; k < m+n; k++ {
					if mask&(1<<k) != 0 {
						u += seconds // larger than every second-sample value below it
					} else {
						seconds++
					}
				}
				want[u]++
			}
			got := uCounts(m, n)
			if len(got) != len(want) {
				t.Fatalf("m=%d n=%d: %d counts, want %d", m, n, len(got), len(want))
			}
			for u := range want {
				if got[u] != want[u] {
					t.Errorf("m=%d n=%d: count of U=%d is %v, want %v", m, n, u, got[u], want[u])
				}
			}
		}
	}
}

// TestMannWhitneyCriticalValues checks the exact distribution against the table of critical
// values of U for a two-sided test at 0.05 that statistics textbooks print (and R's pwilcox
// reproduces): the largest U whose two-sided p-value is at most 0.05.
func TestMannWhitneyCriticalValues(t *testing.T) {
	for _, tt := range []struct{ m, n, crit int }{
		{3, 5, 0}, {4, 4, 0}, {5, 5, 2}, {6, 6, 5}, {7, 7, 8}, {8, 8, 13}, {9, 9, 17}, {10, 10, 23},
		{5, 10, 8}, {8, 12, 22}, {15, 15, 64}, {20, 20, 127},
	} {
		if p := exactTwoSided(tt.m, tt.n, tt.crit); p > 0.05 {
			t.Errorf("m=%d n=%d: p(U=%d) = %v, want ≤ 0.05", tt.m, tt.n, tt.crit, p)
		}
		if p := exactTwoSided(tt.m, tt.n, tt.crit+1); p <= 0.05 {
			t.Errorf("m=%d n=%d: p(U=%d) = %v, want > 0.05", tt.m, tt.n, tt.crit+1, p)
		}
	}
}

func TestMannWhitneyMinP(t *testing.T) {
	for _, tt := range []struct {
		n1, n2 int
		want   float64
	}{
		{0, 5, 1}, {1, 1, 1}, // 2/C(2,1) = 1 {1, 2, 2.0 / 3}, {2, 2, 1.0 / 3}, {3, 3, 0.1}, {3, 4, 2.0 / 35}, {4, 4, 2.0 / 70},
		{5, 5, 2.0 / 252}, {1, 19, 0.1}, {20, 20, 1.4508889103849688e-11},
	} {
		got := MannWhitneyMinP(tt.n1, tt.n2)
		if math.Abs(got-tt.want) > 1e-12*tt.want {
			t.Errorf("MannWhitneyMinP(%d, %d) = %.17g, want %.17g", tt.n1, tt.n2, got, tt.want)
		}
	}
	// The minimum is what two samples that do not overlap give, in both ranges.
	for _, sz := range [][2]int{{3, 3}, {4, 6}, {1, 30}, {49, 49}, {50, 50}, {1, 60}, {80, 5}} {
		x, y := span(1, float64(sz[0])), span(1000, float64(999+sz[1]))
		r, err := MannWhitneyU(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if want := MannWhitneyMinP(sz[0], sz[1]); math.Abs(r.P-want) > 1e-12*want {
			t.Errorf("%d vs %d values apart: P = %v (%s), MannWhitneyMinP = %v", sz[0], sz[1], r.P, r.Method, want)
		}
	}
	// One value against 60 is in the normal range, where even a complete separation stays
	// above 0.05: z = (30 − ½)/√(60·62/12) ≈ 1.676.
	if p := MannWhitneyMinP(1, 60); p < 0.05 || p > 0.1 {
		t.Errorf("MannWhitneyMinP(1, 60) = %v, want about 0.094", p)
	}
	for _, tt := range []struct {
		alpha float64
		want  int
	}{{0.05, 4}, {0.1, 4}, {0.11, 3}, {0.01, 5}, {0.001, 7}, {0, -1}, {1, -1}} {
		if got := MannWhitneyMinN(tt.alpha); got != tt.want {
			t.Errorf("MannWhitneyMinN(%v) = %d, want %d", tt.alpha, got, tt.want)
		}
	}
}

func TestMannWhitneySymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		x, y := make([]float64, 1+r.IntN(70)), make([]float64, 1+r.IntN(70))
		for i := range x {
			x[i] = math.Round(r.NormFloat64() * 20)
		}
		for i := range y {
			y[i] = math.Round(r.NormFloat64()*20 + 5)
		}
		a, err1 := MannWhitneyU(x, y)
		b, err2 := MannWhitneyU(y, x)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if math.Abs(a.P-b.P) > 1e-12 || a.U+b.U != float64(len(x)*len(y)) || a.Method != b.Method {
			t.Fatalf("trial %d: x,y gives U=%v P=%v %s; y,x gives U=%v P=%v %s", trial, a.U, a.P, a.Method, b.U, b.P, b.Method)
		}
		if !(a.P > 0 && a.P <= 1) {
			t.Fatalf("trial %d: P = %v, want in (0, 1]", trial, a.P)
		}
	}
}

// TestMannWhitneyExactNearNormal checks that the two methods agree where both are good: for 40
// and 45 values the exact p-value and the normal approximation differ by little.
func TestMannWhitneyExactNearNormal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		x, y := make([]float64, 40), make([]float64, 45)
		for i := range x {
			x[i] = r.ExpFloat64()
		}
		for i := range y {
			y[i] = r.ExpFloat64() * 1.3
		}
		res, err := MannWhitneyU(x, y)
		if err != nil || res.Method != MethodExact {
			t.Fatalf("trial %d: %v %s", trial, err, res.Method)
		}
		if approx := normalTwoSided(40, 45, res.U, 0); math.Abs(approx-res.P) > 0.005 {
			t.Errorf("trial %d: U=%v exact P %v, normal %v", trial, res.U, res.P, approx)
		}
	}
}

func TestMannWhitneyErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		x, y []float64
	}{
		{"empty x", nil, []float64{1}},
		{"empty y", []float64{1}, []float64{}},
		{"NaN", []float64{1, math.NaN()}, []float64{2}},
		{"Inf", []float64{1}, []float64{math.Inf(-1)}},
	} {
		if _, err := MannWhitneyU(tt.x, tt.y); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestMannWhitneyFalsePositiveRate draws both samples from one distribution many times: the
// share of p-values below alpha must be near alpha, and never far above it. The draws are
// seeded, so the test is deterministic; the bounds are about four binomial standard deviations
// (√(0.05·0.95/2000) ≈ 0.005) around 0.05, with room below for the discreteness of the exact
// test (for 10 and 10 values the largest attainable level under 0.05 is 0.043).
func TestMannWhitneyFalsePositiveRate(t *testing.T) {
	const trials, alpha = 2000, 0.05
	for _, tt := range []struct {
		name   string
		n1, n2 int
		draw   func(r *rand.Rand) float64
		method Method
	}{
		{"exact 10+10 lognormal", 10, 10, func(r *rand.Rand) float64 { return 40 * math.Exp(0.3*r.NormFloat64()) }, MethodExact},
		{"exact 20+25 exponential", 20, 25, func(r *rand.Rand) float64 { return 5 + r.ExpFloat64() }, MethodExact},
		{"normal 60+60 lognormal", 60, 60, func(r *rand.Rand) float64 { return 40 * math.Exp(0.3*r.NormFloat64()) }, MethodNormal},
		// Latencies rounded to whole milliseconds: many ties, so the normal approximation.
		{"ties 30+30 rounded", 30, 30, func(r *rand.Rand) float64 { return math.Round(40 + 3*r.NormFloat64()) }, MethodNormal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(tt.n1*1000+tt.n2)))
			hits := 0
			for i := 0; i < trials; i++ {
				x, y := make([]float64, tt.n1), make([]float64, tt.n2)
				for j := range x {
					x[j] = tt.draw(r)
				}
				for j := range y {
					y[j] = tt.draw(r)
				}
				res, err := MannWhitneyU(x, y)
				if err != nil {
					t.Fatal(err)
				}
				if res.Method != tt.method && !(tt.method == MethodExact && res.Ties) {
					t.Fatalf("method %s, want %s", res.Method, tt.method)
				}
				if res.P < alpha {
					hits++
				}
			}
			rate := float64(hits) / trials
			t.Logf("false-positive rate %.4f over %d trials", rate, trials)
			if rate < 0.025 || rate > 0.07 {
				t.Errorf("false-positive rate %.4f, want near %v", rate, alpha)
			}
		})
	}
}

// TestMannWhitneyDetectsShift checks the power of the test: a 25% longer median, drawn from
// lognormal latencies with a spread of 0.2 (in log space), is found in nearly every trial of 30
// values a side (the effect is about 1.1 standard deviations).
func TestMannWhitneyDetectsShift(t *testing.T) {
	const trials = 300
	r := rand.New(rand.NewPCG(5, 6))
	hits := 0
	for i := 0; i < trials; i++ {
		x, y := make([]float64, 30), make([]float64, 30)
		for j := range x {
			x[j] = 40 * math.Exp(0.2*r.NormFloat64())
			y[j] = 1.25 * 40 * math.Exp(0.2*r.NormFloat64())
		}
		res, err := MannWhitneyU(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if res.P < 0.05 {
			hits++
			if res.U > 450 {
				t.Errorf("trial %d: significant with U = %v, but x is the smaller sample", i, res.U)
			}
		}
	}
	if power := float64(hits) / trials; power < 0.9 {
		t.Errorf("detected the shift in %.3f of trials, want at least 0.9", power)
	}
}

func BenchmarkMannWhitneyU(b *testing.B) {
	for _, n := range []int{10, 30, 200} {
		r := rand.New(rand.NewPCG(7, uint64(n)))
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = r.ExpFloat64(), r.ExpFloat64()
		}
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := MannWhitneyU(x, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUCounts measures building the exact distribution for the largest exact sizes, which
// MannWhitneyU does once per pair of sizes.
func BenchmarkUCounts(b *testing.B) {
	for b.Loop() {
		uCounts(ExactLimit-1, ExactLimit-1)
	}
}
