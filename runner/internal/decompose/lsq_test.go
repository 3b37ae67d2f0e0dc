package decompose

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

// Expected values were worked out with exact rational arithmetic; the t critical values are the
// 0.975 quantiles of Student's t printed in every statistics table (3.182 for 3 degrees of
// freedom, 4.303 for 2).
func TestLinearHandComputed(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{2.1, 3.9, 6.2, 7.8, 10.1}
	l, err := Linear(x, y)
	if err != nil {
		t.Fatal(err)
	}
	const t3 = 3.182446
	checks := []struct {
		name      string
		got, want float64
	}{
		{"a", l.Intercept.Value, 0.05},
		{"b", l.Slope.Value, 1.99},
		{"se(a)", l.Intercept.StdErr, 0.1980740602},
		{"se(b)", l.Slope.StdErr, 0.0597215762},
		{"b low", l.Slope.Low, 1.99 - t3*0.0597215762},
		{"b high", l.Slope.High, 1.99 + t3*0.0597215762},
		{"a low", l.Intercept.Low, 0.05 - t3*0.1980740602},
		{"R²", l.R2, 0.9973053289},
		{"residual se", l.ResidualSE, math.Sqrt(0.107 / 3)},
		{"predict(10)", l.Predict(10), 0.05 + 19.9},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-6) {
			t.Errorf("%s = %.10g, want %.10g", c.name, c.got, c.want)
		}
	}
	if l.N != 5 || l.DF != 3 {
		t.Errorf("N %d, DF %d; want 5, 3", l.N, l.DF)
	}
}

func TestProportionalHandComputed(t *testing.T) {
	l, err := Proportional([]float64{1, 2, 4}, []float64{3, 4.1, 8.3})
	if err != nil {
		t.Fatal(err)
	}
	const t2 = 4.302653
	c, se := 74.0/35, 0.1402136368
	checks := []struct {
		name      string
		got, want float64
	}{
		{"c", l.Slope.Value, c},
		{"se(c)", l.Slope.StdErr, se},
		{"c low", l.Slope.Low, c - t2*se},
		{"c high", l.Slope.High, c + t2*se},
		{"R²", l.R2, 0.9472274636},
		{"intercept", l.Intercept.Value, 0},
		{"intercept se", l.Intercept.StdErr, math.NaN()},
	}
	for _, ch := range checks {
		if !near(ch.got, ch.want, 1e-5) {
			t.Errorf("%s = %.10g, want %.10g", ch.name, ch.got, ch.want)
		}
	}
	if l.DF != 2 {
		t.Errorf("DF %d, want 2", l.DF)
	}
}

func TestFitsWithoutResidualFreedom(t *testing.T) {
	l, err := Linear([]float64{1, 3}, []float64{5, 9})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slope.Value != 2 || l.Intercept.Value != 3 || l.DF != 0 {
		t.Errorf("two points: slope %g, intercept %g, DF %d; want 2, 3, 0", l.Slope.Value, l.Intercept.Value, l.DF)
	}
	if !math.IsNaN(l.Slope.Low) || !math.IsNaN(l.Slope.StdErr) || !math.IsNaN(l.ResidualSE) {
		t.Errorf("two points have an interval: %+v", l.Slope)
	}
	p, err := Proportional([]float64{4}, []float64{10})
	if err != nil {
		t.Fatal(err)
	}
	if p.Slope.Value != 2.5 || !math.IsNaN(p.Slope.High) {
		t.Errorf("one point: %+v", p.Slope)
	}
}

func TestFitErrors(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		fit  func(x, y []float64) (Line, error)
		x, y []float64
		want string
	}{
		{"linear lengths", Linear, []float64{1, 2}, []float64{1}, "2 x values but 1 y values"},
		{"linear one point", Linear, []float64{1}, []float64{1}, "1 points: need at least 2"},
		{"linear constant x", Linear, []float64{3, 3, 3}, []float64{1, 2, 3}, "x takes a single value"},
		{"linear NaN", Linear, []float64{1, 2, nan}, []float64{1, 2, 3}, "point 2 is not finite"},
		{"linear Inf", Linear, []float64{1, 2, 3}, []float64{1, math.Inf(1), 3}, "point 1 is not finite"},
		{"proportional empty", Proportional, nil, nil, "0 points: need at least 1"},
		{"proportional zeros", Proportional, []float64{0, 0}, []float64{1, 2}, "every x is zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.fit(tt.x, tt.y)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := Linear([]float64{2, 2}, []float64{1, 2}); !errors.Is(err, ErrNoVariation) {
		t.Errorf("constant x: %v does not wrap ErrNoVariation", err)
	}
}

// TestIntervalCoverage checks the intervals against their promise: over many samples drawn
// from a known line with normal noise, about 95% of them contain the true coefficients.
func TestIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const trials = 2000
	x := []float64{16, 64, 128, 256, 512, 768}
	var coverA, coverB, coverC int
	for range trials {
		y := make([]float64, len(x))
		yp := make([]float64, len(x))
		for i, xi := range x {
			y[i] = 12 + 0.05*xi + 2*rng.NormFloat64()
			yp[i] = 8*xi + 40*rng.NormFloat64()
		}
		l, err := Linear(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if l.Intercept.Low <= 12 && 12 <= l.Intercept.High {
			coverA++
		}
		if l.Slope.Low <= 0.05 && 0.05 <= l.Slope.High {
			coverB++
		}
		p, err := Proportional(x, yp)
		if err != nil {
			t.Fatal(err)
		}
		if p.Slope.Low <= 8 && 8 <= p.Slope.High {
			coverC++
		}
	}
	// With 2000 trials the observed coverage of a true 95% interval lies within ±1.5 points
	// with probability above 99.9%; t intervals with 4 and 5 degrees of freedom are exact.
	for name, n := range map[string]int{"a": coverA, "b": coverB, "c": coverC} {
		if got := float64(n) / trials; got < 0.935 || got > 0.965 {
			t.Errorf("interval for %s covers the true value in %.1f%% of trials, want about 95%%", name, got*100)
		}
	}
}

func BenchmarkLinear(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 1000)
	y := make([]float64, 1000)
	for i := range x {
		x[i] = float64(i % 17 * 64)
		y[i] = 20 + 0.04*x[i] + rng.NormFloat64()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Linear(x, y); err != nil {
			b.Fatal(err)
		}
	}
}
