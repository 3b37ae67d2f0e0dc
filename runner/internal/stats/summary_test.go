package stats

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seq returns 1, 2, ..., n in a scrambled order, so that the tests also check the sorting.
func seq(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64((i*7)%n + 1)
	}
	return xs
}

func TestSummarizeHandComputed(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		xs   []float64
		want Summary
		// warn lists substrings that must each appear in one warning; nil means no warnings.
		warn []string
	}{
		{
			name: "empty",
			xs:   nil,
			want: Summary{N: 0, Min: nan, Median: nan, P95: nan, P99: nan, Max: nan, Mean: nan, Stddev: nan,
				MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan},
			warn: []string{"no samples"},
		},
		{
			name: "one value",
			xs:   []float64{7},
			want: Summary{N: 1, Min: 7, Median: 7, P95: 7, P99: 7, Max: 7, Mean: 7, Stddev: nan,
				MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan},
			warn: []string{"no spread", "too few samples for a 95% median interval (need 6)"},
		},
		{
			// Ranks for p95: 0.95·4 = 3.8 → 40 + 0.8·(50−40) = 48; p99: 3.96 → 49.6.
			// Deviations from the mean 32: −17 −12 3 8 18; squares sum to 830; 830/4 = 207.5.
			name: "five uneven values",
			xs:   []float64{50, 15, 40, 20, 35},
			want: Summary{N: 5, Min: 15, Median: 35, P95: 48, P99: 49.6, Max: 50, Mean: 32, Stddev: math.Sqrt(207.5),
				MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan},
			warn: []string{"n=5: too few samples", "p95 and p99 lie between the two largest"},
		},
		{
			// B(6,½): P(B=0) = 1/64 ≤ 0.025, so the interval is [x(1), x(6)] with coverage 1 − 2/64.
			name: "six values, smallest interval",
			xs:   seq(6),
			want: Summary{N: 6, Min: 1, Median: 3.5, P95: 5.75, P99: 5.95, Max: 6, Mean: 3.5, Stddev: math.Sqrt(17.5 / 5),
				MedianCILow: 1, MedianCIHigh: 6, MedianCILevel: 0.96875},
			warn: []string{"p95 and p99 lie between"},
		},
		{
			// p95: 0.95·9 = 8.55 → 9.55; p99: 8.91 → 9.91; variance 82.5/9.
			// B(10,½): P(B≤1) = 11/1024 ≤ 0.025 < P(B≤2) = 56/1024, so [x(2), x(9)].
			name: "one to ten",
			xs:   seq(10),
			want: Summary{N: 10, Min: 1, Median: 5.5, P95: 9.55, P99: 9.91, Max: 10, Mean: 5.5, Stddev: 3.0276503540974917,
				MedianCILow: 2, MedianCIHigh: 9, MedianCILevel: 0.978515625},
			warn: []string{"p95 and p99 lie between"},
		},
		{
			// p95: 0.95·19 = 18.05 → 19.05; p99: 18.81 → 19.81; variance (20²−1)/12·20/19 = 35.
			// B(20,½): Σ_{k≤5} C(20,k) = 21700 ≤ 0.025·2²⁰ < Σ_{k≤6} = 60460, so [x(6), x(15)].
			name: "one to twenty",
			xs:   seq(20),
			want: Summary{N: 20, Min: 1, Median: 10.5, P95: 19.05, P99: 19.81, Max: 20, Mean: 10.5, Stddev: math.Sqrt(35),
				MedianCILow: 6, MedianCIHigh: 15, MedianCILevel: 1 - 2*21700.0/1048576},
			warn: []string{"p95 and p99 lie between"},
		},
		{
			// p95: 0.95·99 = 94.05 → 95.05, two below the top: no p95 warning, but p99 (98.01 →
			// 99.01) still lies between the two largest. B(100,½): ranks 40 and 61, the textbook
			// pair for n = 100.
			name: "one to hundred",
			xs:   seq(100),
			want: Summary{N: 100, Min: 1, Median: 50.5, P95: 95.05, P99: 99.01, Max: 100, Mean: 50.5, Stddev: math.Sqrt(10100.0 / 12),
				MedianCILow: 40, MedianCIHigh: 61, MedianCILevel: 0.9647997997822952},
			warn: []string{"n=100: p99 lies between the two largest"},
		},
		{
			name: "non-finite values left out",
			xs:   []float64{math.NaN(), 2, math.Inf(1), 4},
			want: Summary{N: 2, Min: 2, Median: 3, P95: 3.9, P99: 3.98, Max: 4, Mean: 3, Stddev: math.Sqrt2,
				MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan},
			warn: []string{"2 non-finite values left out", "too few samples", "p95 and p99 lie between"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.xs)
			got := Summarize(tt.xs)
			if !slices.EqualFunc(in, tt.xs, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
				t.Errorf("Summarize changed its input: %v, was %v", tt.xs, in)
			}
			if got.N != tt.want.N {
				t.Errorf("N = %d, want %d", got.N, tt.want.N)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"Min", got.Min, tt.want.Min}, {"Median", got.Median, tt.want.Median},
				{"P95", got.P95, tt.want.P95}, {"P99", got.P99, tt.want.P99},
				{"Max", got.Max, tt.want.Max}, {"Mean", got.Mean, tt.want.Mean},
				{"Stddev", got.Stddev, tt.want.Stddev},
				{"MedianCILow", got.MedianCILow, tt.want.MedianCILow},
				{"MedianCIHigh", got.MedianCIHigh, tt.want.MedianCIHigh},
				{"MedianCILevel", got.MedianCILevel, tt.want.MedianCILevel},
			} {
				if !near(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
			if tt.warn == nil && len(got.Warnings) > 0 {
				t.Errorf("Warnings = %q, want none", got.Warnings)
			}
			for _, w := range tt.warn {
				if !slices.ContainsFunc(got.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("Warnings = %q, want one containing %q", got.Warnings, w)
				}
			}
			if len(got.Warnings) != len(tt.warn) {
				t.Errorf("Warnings = %q, want %d of them", got.Warnings, len(tt.warn))
			}
		})
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func TestMinSamplesForCI(t *testing.T) {
	// P(B=0) = 2⁻ⁿ must be at most (1−level)/2: 2⁻⁶ ≤ 0.025 < 2⁻⁵; 2⁻⁸ ≤ 0.005 < 2⁻⁷;
	// 2⁻⁴ ≤ 0.1 < 2⁻³.
	for _, tt := range []struct {
		level float64
		want  int
	}{{0.95, 6}, {0.99, 8}, {0.8, 4}} {
		if got := MinSamplesForCI(tt.level); got != tt.want {
			t.Errorf("MinSamplesForCI(%v) = %d, want %d", tt.level, got, tt.want)
		}
	}
}

func TestMedianCICoverageNeverBelowLevel(t *testing.T) {
	for n := 6; n <= 2000; n += 7 {
		xs := seq(n)
		slices.Sort(xs)
		lo, hi, level, ok := MedianCI(xs, Level)
		if !ok {
			t.Fatalf("n=%d: no interval", n)
		}
		if level < Level || level > 1 {
			t.Errorf("n=%d: coverage %v, want in [%v, 1]", n, level, Level)
		}
		if lo > hi || lo > xs[(n-1)/2] || hi < xs[n/2] {
			t.Errorf("n=%d: interval [%v, %v] does not hold the median", n, lo, hi)
		}
		// The next narrower interval must fall below the level, or the rank was not the
		// largest allowed.
		l := int(lo)
		if narrower := 1 - 2*(1-level)/2 - 2*binomHalf(n, l); narrower >= Level {
			t.Errorf("n=%d: rank %d is not the largest: rank %d still covers %v", n, l, l+1, narrower)
		}
	}
}

func TestMinSamplesForTail(t *testing.T) {
	for _, tt := range []struct {
		p    float64
		want int
	}{{0.95, 22}, {0.99, 102}, {0.5, 4}} {
		got := MinSamplesForTail(tt.p)
		if got != tt.want {
			t.Errorf("MinSamplesForTail(%g) = %d, want %d", tt.p, got, tt.want)
		}
		// The warning Summarize gives must agree: present one value below, absent at it.
		vals := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(i)
			}
			return v
		}
		if tt.p == 0.95 {
			if w := strings.Join(Summarize(vals(got-1)).Warnings, "; "); !strings.Contains(w, "p95") {
				t.Errorf("n=%d: warnings %q, want one about p95", got-1, w)
			}
			if w := strings.Join(Summarize(vals(got)).Warnings, "; "); strings.Contains(w, "p95") {
				t.Errorf("n=%d: warnings %q, want none about p95", got, w)
			}
		}
	}
}

func TestAdvice(t *testing.T) {
	for _, tt := range []struct{ n, want string }{
		{"3", "6 measured requests per config give the median its 95% interval"},
		{"8", "22 measured requests per config make p95 a tail of its own, 102 make p99 one"},
		{"30", "102 measured requests per config make p99 a tail of its own"},
	} {
		n, _ := strconv.Atoi(tt.n)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		var got []string
		for _, w := range Summarize(v).Warnings {
			if a := Advice(w); a != "" {
				got = append(got, a)
			}
		}
		if !slices.Contains(got, tt.want) {
			t.Errorf("n=%s: advice %q, want %q among it", tt.n, got, tt.want)
		}
	}
	if a := Advice("one sample: no spread"); a != "" {
		t.Errorf("advice for a warning more requests do not answer: %q", a)
	}
}
