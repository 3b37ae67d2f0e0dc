package decompose

import "math"

// studentTQuantile returns the p quantile of Student's t distribution with df degrees of
// freedom: the t with P(T ≤ t) = p. It is -Inf at p = 0, +Inf at p = 1 and NaN for a p
// outside [0, 1] or a df below 1. The result is accurate to about 1e-13 relative for the
// degrees of freedom a fit can have.
func studentTQuantile(p float64, df int) float64 {
	switch {
	case df < 1 || math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	}
	// The distribution is symmetric: solve for the tail beyond |t|, which 1-p gives exactly
	// for p ≥ 0.5 (Sterbenz), and give it the sign of p - 1/2.
	tail, sign := p, -1.0
	if p > 0.5 {
		tail, sign = 1-p, 1
	}
	var t float64
	switch df {
	case 1: // Cauchy: the tail beyond t is atan(1/t)/π.
		t = 1 / math.Tan(math.Pi*tail)
	case 2: // The tail beyond t is (1 - t/√(2+t²))/2.
		t = (1 - 2*tail) / math.Sqrt(2*tail*(1-tail))
	default:
		t = tQuantileTail(tail, float64(df))
	}
	return sign * t
}

// tQuantileTail returns the t > 0 whose upper tail under Student's t with nu degrees of
// freedom is tail, for 0 < tail < 1/2: Newton's method on the tail, kept inside a bracket
// that bisection shrinks whenever a Newton step would leave it.
func tQuantileTail(tail, nu float64) float64 {
	lo, hi := 0.0, 1.0
	for tTail(hi, nu) > tail {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 0) {
			return hi
		}
	}
	t := (lo + hi) / 2
	for range 200 {
		diff := tTail(t, nu) - tail // positive while t is too small
		if diff == 0 {
			return t
		}
		if diff > 0 {
			lo = t
		} else {
			hi = t
		}
		next := t + diff/tDensity(t, nu)
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-t) <= 2e-16*t || hi-lo <= 2e-16*t {
			return next
		}
		t = next
	}
	return t
}

// tTail returns P(T > t) for t ≥ 0 under Student's t with nu degrees of freedom:
// I_x(nu/2, 1/2)/2 with x = nu/(nu+t²).
func tTail(t, nu float64) float64 {
	t2 := t * t
	x, y := nu/(nu+t2), t2/(nu+t2) // y = 1-x without the cancellation
	return regIncBeta(nu/2, 0.5, x, y, lnBetaHalf(nu/2)) / 2
}

// tDensity returns the density of Student's t with nu degrees of freedom at t.
func tDensity(t, nu float64) float64 {
	return math.Exp(-lnBetaHalf(nu/2)-(nu+1)/2*math.Log1p(t*t/nu)) / math.Sqrt(nu)
}

// regIncBeta returns the regularized incomplete beta function I_x(p, q), given y = 1-x
// separately so that neither loses digits near 1, and lnB = ln B(p, q). It evaluates the
// continued fraction where it converges quickly, and elsewhere uses I_x(p, q) = 1 - I_y(q, p).
func regIncBeta(p, q, x, y, lnB float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	case x > (p+1)/(p+q+2):
		return 1 - betaFraction(q, p, y, x, lnB)
	}
	return betaFraction(p, q, x, y, lnB)
}

// betaFraction evaluates I_x(p, q) by its continued fraction,
//
//	I_x(p, q) = x^p y^q / (p B(p, q)) · 1/(1+ d1/(1+ d2/(1+ ...))),
//	d(2m+1) = -(p+m)(p+q+m) x / ((p+2m)(p+2m+1)),  d(2m) = m(q-m) x / ((p+2m-1)(p+2m)),
//
// with the modified Lentz method. It converges fast for x < (p+1)/(p+q+2).
func betaFraction(p, q, x, y, lnB float64) float64 {
	lnx, lny := math.Log(x), math.Log1p(-x)
	if x > 0.5 {
		lnx, lny = math.Log1p(-y), math.Log(y)
	}
	front := math.Exp(p*lnx+q*lny-lnB) / p

	// Lentz: f is the fraction so far, c and d the ratios that extend it by one more
	// a/(1 + ...), kept away from zero.
	const tiny = 1e-300
	f, c, d := tiny, tiny, 0.0
	extend := func(a float64) (converged bool) {
		d = 1 + a*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + a/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := c * d
		f *= delta
		return math.Abs(delta-1) <= 1e-15
	}
	extend(1) // the leading 1/(1+ ...)
	for m := 0.0; m < 1e6; m++ {
		even := m == 0 || extend(m*(q-m)*x/((p+2*m-1)*(p+2*m)))
		odd := extend(-(p + m) * (p + q + m) * x / ((p + 2*m) * (p + 2*m + 1)))
		if even && odd {
			break
		}
	}
	return front * f
}

// lnBetaHalf returns ln B(a, 1/2) = ln Γ(a) + ln Γ(1/2) - ln Γ(a+1/2). For large a the two
// log-gammas are large and nearly equal, so their difference comes from its asymptotic series
//
//	ln Γ(a+1/2) - ln Γ(a) = ln(a)/2 - 1/(8a) + 1/(192a³) - 1/(640a⁵) + 17/(14336a⁷) - ...,
//
// which at a ≥ 20 is exact to double precision.
func lnBetaHalf(a float64) float64 {
	if a < 20 {
		la, _ := math.Lgamma(a)
		lh, _ := math.Lgamma(a + 0.5)
		return la + math.Log(math.Pi)/2 - lh
	}
	r := 1 / a
	r2 := r * r
	diff := math.Log(a)/2 - r/8 + r*r2/192 - r*r2*r2/640 + 17*r*r2*r2*r2/14336
	return math.Log(math.Pi)/2 - diff
}
