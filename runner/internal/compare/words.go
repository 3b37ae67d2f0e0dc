package compare

import (
	"fmt"
	"math"
	"strconv"
)

// pct formats a change in percent with its sign: +9.66%, -3.20%, +0.00%.
func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", x)
}

// pValue formats a p-value for people: three decimals, or <0.001. Where three decimals would
// put p on the other side of alpha (0.0496 is not "0.050" when alpha is 0.05), it shows as many
// more digits as it takes.
func pValue(p, alpha float64) string {
	switch {
	case math.IsNaN(p):
		return "-"
	case p < 0.001:
		return "<0.001"
	}
	for digits := 3; ; digits++ {
		s := strconv.FormatFloat(p, 'f', digits, 64)
		shown, _ := strconv.ParseFloat(s, 64)
		if (shown < alpha) == (p < alpha) || digits >= 17 {
			return s
		}
	}
}

// joinAnd joins names as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	s := xs[0]
	for _, x := range xs[1 : len(xs)-1] {
		s += ", " + x
	}
	return s + " and " + xs[len(xs)-1]
}
