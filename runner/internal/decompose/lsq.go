package decompose

import (
	"errors"
	"fmt"
	"math"
)

// Level is the confidence level of every interval this package computes.
const Level = 0.95

// Estimate is one fitted coefficient with its standard error and a Level confidence interval
// from Student's t distribution. StdErr, Low and High are NaN when the fit has no residual
// degrees of freedom (as many points as coefficients).
type Estimate struct {
	Value  float64
	StdErr float64
	Low    float64
	High   float64
}

// Line is an ordinary least-squares fit of y on x: y ≈ Intercept + Slope·x, or y ≈ Slope·x
// for a fit through the origin (Intercept is then the zero Estimate with NaN spread).
type Line struct {
	Intercept Estimate
	Slope     Estimate
	// R2 is the coefficient of determination 1 − SSR/SST about the mean of y (also for a fit
	// through the origin, where it can be negative); NaN when y does not vary.
	R2 float64
	// ResidualSE is the standard deviation of the residuals, √(SSR/DF); NaN when DF is 0.
	ResidualSE float64
	N          int // points fitted
	DF         int // residual degrees of freedom: N − 2 with an intercept, N − 1 without
}

// Predict returns the fitted value at x.
func (l Line) Predict(x float64) float64 { return l.Intercept.Value + l.Slope.Value*x }

// ErrNoVariation reports that x takes a single value, so a slope cannot be told from an
// intercept.
var ErrNoVariation = errors.New("x takes a single value")

// tQuantile returns the two-sided Level critical value of Student's t with df degrees of
// freedom.
func tQuantile(df int) float64 {
	return studentTQuantile(1-(1-Level)/2, df)
}

func estimate(v, se float64, df int) Estimate {
	if df < 1 || math.IsNaN(se) {
		return Estimate{Value: v, StdErr: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	t := tQuantile(df)
	return Estimate{Value: v, StdErr: se, Low: v - t*se, High: v + t*se}
}

func checkPoints(x, y []float64, min int) error {
	if len(x) != len(y) {
		return fmt.Errorf("%d x values but %d y values", len(x), len(y))
	}
	if len(x) < min {
		return fmt.Errorf("%d points: need at least %d", len(x), min)
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return fmt.Errorf("point %d is not finite (%g, %g)", i, x[i], y[i])
		}
	}
	return nil
}

// mean returns the arithmetic mean of xs, which must not be empty.
func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// rSquared returns 1 − ssr/Σ(y − ȳ)², or NaN when y does not vary.
func rSquared(y []float64, ssr float64) float64 {
	ybar := mean(y)
	var sst float64
	for _, v := range y {
		sst += (v - ybar) * (v - ybar)
	}
	if sst == 0 {
		return math.NaN()
	}
	return 1 - ssr/sst
}

// Linear fits y ≈ a + b·x by ordinary least squares. The standard errors assume independent
// residuals of constant variance; the intervals use Student's t with n − 2 degrees of freedom.
// It needs at least two points and two distinct x values (ErrNoVariation otherwise).
func Linear(x, y []float64) (Line, error) {
	if err := checkPoints(x, y, 2); err != nil {
		return Line{}, fmt.Errorf("linear fit: %w", err)
	}
	n := len(x)
	xbar, ybar := mean(x), mean(y)
	// Centred sums avoid the cancellation of Σx² − n·x̄² when x is large and varies little.
	var sxx, sxy float64
	for i := range x {
		dx := x[i] - xbar
		sxx += dx * dx
		sxy += dx * (y[i] - ybar)
	}
	if sxx == 0 {
		return Line{}, fmt.Errorf("linear fit: %w (%g)", ErrNoVariation, x[0])
	}
	b := sxy / sxx
	a := ybar - b*xbar
	var ssr float64
	for i := range x {
		r := y[i] - a - b*x[i]
		ssr += r * r
	}
	l := Line{N: n, DF: n - 2, R2: rSquared(y, ssr), ResidualSE: math.NaN()}
	seA, seB := math.NaN(), math.NaN()
	if l.DF > 0 {
		s := math.Sqrt(ssr / float64(l.DF))
		l.ResidualSE = s
		seB = s / math.Sqrt(sxx)
		seA = s * math.Sqrt(1/float64(n)+xbar*xbar/sxx)
	}
	l.Intercept = estimate(a, seA, l.DF)
	l.Slope = estimate(b, seB, l.DF)
	return l, nil
}

// Proportional fits y ≈ c·x through the origin by ordinary least squares: c = Σxy / Σx², with
// standard error √(SSR/(n−1) / Σx²) and a Student t interval with n − 1 degrees of freedom. R2
// is measured about the mean of y, as for Linear, so that it says how much of the spread of y
// the line explains. It needs at least one point with x ≠ 0.
func Proportional(x, y []float64) (Line, error) {
	if err := checkPoints(x, y, 1); err != nil {
		return Line{}, fmt.Errorf("proportional fit: %w", err)
	}
	var sxx, sxy float64
	for i := range x {
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	if sxx == 0 {
		return Line{}, errors.New("proportional fit: every x is zero")
	}
	c := sxy / sxx
	var ssr float64
	for i := range x {
		r := y[i] - c*x[i]
		ssr += r * r
	}
	n := len(x)
	l := Line{N: n, DF: n - 1, R2: rSquared(y, ssr), ResidualSE: math.NaN()}
	se := math.NaN()
	if l.DF > 0 {
		s := math.Sqrt(ssr / float64(l.DF))
		l.ResidualSE = s
		se = s / math.Sqrt(sxx)
	}
	l.Intercept = Estimate{StdErr: math.NaN(), Low: math.NaN(), High: math.NaN()}
	l.Slope = estimate(c, se, l.DF)
	return l, nil
}
