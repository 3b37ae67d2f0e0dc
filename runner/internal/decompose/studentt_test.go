package decompose

import (
	"math"
	"testing"
)

// relErr returns |got-want|/|want|.
func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestStudentTQuantileTables checks the two-sided 95% critical values against the values
// statistical tables print, to their nine decimals.
func TestStudentTQuantileTables(t *testing.T) {
	for _, tt := range []struct {
		df   int
		want float64
	}{
		{1, 12.706204736}, {2, 4.302652730}, {3, 3.182446305}, {5, 2.570581836},
		{10, 2.228138852}, {30, 2.042272456}, {100, 1.983971519}, {1000, 1.962339081},
	} {
		if got := studentTQuantile(0.975, tt.df); relErr(got, tt.want) > 1e-9 {
			t.Errorf("t(0.975, %d) = %.12g, want %.10g", tt.df, got, tt.want)
		}
		if got := tQuantile(tt.df); relErr(got, tt.want) > 1e-9 {
			t.Errorf("tQuantile(%d) = %.12g, want %.10g", tt.df, got, tt.want)
		}
	}
}

// tReference holds quantiles of Student's t computed to 20 digits by bisection on the
// regularized incomplete beta function in 40-digit arithmetic (mpmath). They agree with the
// printed tables where those go (t(0.995, 1) = 63.657, t(0.95, 1000) = 1.646, ...).
var tReference = []struct {
	df      int
	p, want float64
}{
	{1, 1e-10, -3183098861.8379067153},
	{1, 0.001, -318.30883898555044592},
	{1, 0.05, -6.313751514675043099},
	{1, 0.3, -0.7265425280053608859},
	{1, 0.499, -0.003141602989056156126},
	{1, 0.995, 63.656741162871580995},
	{2, 1e-10, -70710.678108048150722},
	{2, 0.001, -22.327124770119875435},
	{2, 0.05, -2.919985580353725687},
	{2, 0.3, -0.61721339984836764104},
	{2, 0.499, -0.0028284327816174102093},
	{2, 0.995, 9.9248432009182931147},
	{3, 1e-10, -2225.7692846830932198},
	{3, 0.001, -10.21453185240738655},
	{3, 0.05, -2.3533634348018238777},
	{3, 0.3, -0.58438972743981866911},
	{3, 0.499, -0.0027207035217340205862},
	{3, 0.995, 5.8409093097333572607},
	{4, 1e-10, -416.17514032960412732},
	{4, 0.001, -7.1731822197823084789},
	{4, 0.05, -2.1318467863266503183},
	{4, 0.3, -0.56864906304970544415},
	{4, 0.499, -0.0026666706172941344614},
	{4, 0.995, 4.6040948713499932254},
	{7, 1e-10, -53.835579484673732976},
	{7, 0.001, -4.7852896286383340638},
	{7, 0.05, -1.8945786050900073895},
	{7, 0.3, -0.54910965794728501487},
	{7, 0.499, -0.002597463613662205186},
	{7, 0.995, 3.4994832973504939201},
	{20, 1e-10, -11.740060452456985713},
	{20, 0.001, -3.5518083432033331788},
	{20, 0.05, -1.7247182429207872728},
	{20, 0.3, -0.53286279161633223466},
	{20, 0.499, -0.0025381474582010751616},
	{20, 0.995, 2.8453397097861084687},
	{50, 1e-10, -7.9482437476462225129},
	{50, 0.001, -3.2614090557983182072},
	{50, 0.05, -1.6759050251630975675},
	{50, 0.3, -0.52776045270659748741},
	{50, 0.499, -0.0025191946797173983543},
	{50, 0.995, 2.6777932709408442492},
	{1000, 1e-10, -6.4278762831342136333},
	{1000, 0.001, -3.0984021639129229128},
	{1000, 0.05, -1.6463788172854647156},
	{1000, 0.3, -0.52456770730922690054},
	{1000, 0.499, -0.0025072576394709722093},
	{1000, 0.995, 2.5807546980659510793},
	{100000, 1e-10, -6.3620004198436912068},
	{100000, 0.001, -3.0903138094272376137},
	{100000, 0.05, -1.644868864784969734},
	{100000, 0.3, -0.52440218423354570853},
	{100000, 0.499, -0.0025066371661962204695},
	{100000, 0.995, 2.5758784699083753035},
	{1, 0.95, 6.313751514675043099},
	{2, 0.95, 2.919985580353725687},
	{10, 0.95, 1.8124611228116764136},
	{30, 0.995, 2.7499956535672253324},
	{100, 0.95, 1.6602343260853395555},
}

func TestStudentTQuantileReference(t *testing.T) {
	for _, tt := range tReference {
		if got := studentTQuantile(tt.p, tt.df); relErr(got, tt.want) > 1e-12 {
			t.Errorf("t(%g, %d) = %.17g, want %.17g (relative error %.2g)", tt.p, tt.df, got, tt.want, relErr(got, tt.want))
		}
	}
}

// TestStudentTQuantileClosedForms checks the general solver, which studentTQuantile does not
// use for one and two degrees of freedom, against their closed forms.
func TestStudentTQuantileClosedForms(t *testing.T) {
	for _, tail := range []float64{1e-12, 1e-6, 0.001, 0.025, 0.05, 0.2, 0.4, 0.49, 0.4999} {
		cauchy := 1 / math.Tan(math.Pi*tail)
		if got := tQuantileTail(tail, 1); relErr(got, cauchy) > 1e-12 {
			t.Errorf("df 1, tail %g: %.17g, want %.17g", tail, got, cauchy)
		}
		two := (1 - 2*tail) / math.Sqrt(2*tail*(1-tail))
		if got := tQuantileTail(tail, 2); relErr(got, two) > 1e-12 {
			t.Errorf("df 2, tail %g: %.17g, want %.17g", tail, got, two)
		}
	}
}

func TestStudentTQuantileSymmetry(t *testing.T) {
	for _, df := range []int{1, 2, 3, 9, 40, 1000} {
		// 1-p is exact for these, so the two quantiles must be exact negatives.
		for _, p := range []float64{0.25, 0.125, 0.0625, 0.001953125} {
			if lo, hi := studentTQuantile(p, df), studentTQuantile(1-p, df); lo != -hi || lo >= 0 {
				t.Errorf("df %d: t(%g) = %g, t(%g) = %g", df, p, lo, 1-p, hi)
			}
		}
		for _, p := range []float64{0.3, 0.05, 0.01} {
			if lo, hi := studentTQuantile(p, df), studentTQuantile(1-p, df); relErr(-lo, hi) > 1e-12 {
				t.Errorf("df %d: t(%g) = %.17g, t(%g) = %.17g", df, p, lo, 1-p, hi)
			}
		}
	}
}

// TestStudentTQuantileMonotone: the quantile rises with p, and its magnitude falls with the
// degrees of freedom towards the normal distribution's.
func TestStudentTQuantileMonotone(t *testing.T) {
	ps := []float64{1e-9, 1e-4, 0.01, 0.1, 0.3, 0.45, 0.5, 0.55, 0.7, 0.9, 0.99, 0.9999, 1 - 1e-9}
	dfs := []int{1, 2, 3, 4, 5, 8, 13, 21, 34, 55, 89, 144, 1000, 10000, 1000000}
	for _, df := range dfs {
		for i := 1; i < len(ps); i++ {
			if a, b := studentTQuantile(ps[i-1], df), studentTQuantile(ps[i], df); !(a < b) {
				t.Errorf("df %d: t(%g) = %g not below t(%g) = %g", df, ps[i-1], a, ps[i], b)
			}
		}
	}
	for _, p := range []float64{0.6, 0.975, 0.999} {
		for i := 1; i < len(dfs); i++ {
			if a, b := studentTQuantile(p, dfs[i-1]), studentTQuantile(p, dfs[i]); !(a > b) {
				t.Errorf("t(%g): df %d gives %g, not above df %d's %g", p, dfs[i-1], a, dfs[i], b)
			}
		}
	}
	// The normal distribution's 0.975 quantile is 1.959963984540054; t exceeds it by about
	// 2.6/df at large df.
	if got := studentTQuantile(0.975, 10000000); relErr(got, 1.959963984540054) > 1e-6 || got <= 1.959963984540054 {
		t.Errorf("t(0.975, 1e7) = %.15g, want just above the normal 1.959963984540054", got)
	}
}

func TestStudentTQuantileEdges(t *testing.T) {
	for _, tt := range []struct {
		p    float64
		df   int
		want float64
	}{
		{0, 5, math.Inf(-1)}, {1, 5, math.Inf(1)}, {0.5, 5, 0}, {0.5, 1, 0},
		{-0.1, 5, math.NaN()}, {1.1, 5, math.NaN()}, {math.NaN(), 5, math.NaN()},
		{0.975, 0, math.NaN()}, {0.975, -3, math.NaN()},
	} {
		got := studentTQuantile(tt.p, tt.df)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("t(%g, %d) = %g, want %g", tt.p, tt.df, got, tt.want)
		}
	}
}

// TestLnBetaHalfSeries checks the asymptotic series of ln B(a, 1/2) where it takes over from
// the log-gamma functions, whose difference is still accurate there.
func TestLnBetaHalfSeries(t *testing.T) {
	for _, a := range []float64{20, 25, 40} {
		la, _ := math.Lgamma(a)
		lh, _ := math.Lgamma(a + 0.5)
		want := la + math.Log(math.Pi)/2 - lh
		if got := lnBetaHalf(a); math.Abs(got-want) > 1e-14 {
			t.Errorf("lnBetaHalf(%g) = %.17g, log-gammas give %.17g", a, got, want)
		}
	}
}

func BenchmarkStudentTQuantile(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		studentTQuantile(0.975, 3+i%1000)
	}
}
