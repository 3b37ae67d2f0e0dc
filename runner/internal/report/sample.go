package report

import "fmt"

// The most marks a chart draws of one series. A folder of hundreds of thousands of requests
// would otherwise write an SVG and a page of hundreds of megabytes, and a chart no one can
// read: past these bounds a chart draws an evenly spaced sample, and says so in its caption,
// while every statistic it shows (quartiles, percentiles, fits) is computed on all the values.
const (
	maxScatter     = 2000 // points of one scatter series: one request each
	maxCurvePoints = 1000 // steps of one cumulative distribution curve
	maxOutliers    = 300  // points beyond the whiskers of one box
)

// sample returns at most limit of xs, evenly spaced in xs and in their order, the first and
// the last included; xs itself when it has no more than limit.
func sample[T any](xs []T, limit int) []T {
	n := len(xs)
	if n <= limit {
		return xs
	}
	if limit < 2 {
		return xs[:limit]
	}
	out := make([]T, limit)
	for i := range out {
		out[i] = xs[i*(n-1)/(limit-1)]
	}
	return out
}

// drawnCount counts what a chart drew of what it had, for its caption.
type drawnCount struct {
	drawn, all int
}

// add counts a series of all values of which drawn were drawn.
func (d *drawnCount) add(drawn, all int) {
	d.drawn += drawn
	d.all += all
}

// caption is the sentence that says how much of it a sampled chart drew, naming what it counts
// ("requests", "gaps"); empty when it drew everything, so that a small folder's caption is the
// one it always had.
func (d drawnCount) caption(what string) string {
	if d.drawn == d.all {
		return ""
	}
	return fmt.Sprintf(" %s of %s %s drawn: past %s per series the chart draws an evenly spaced sample, and its statistics are computed on all of them.",
		thousands(d.drawn), thousands(d.all), what, thousands(limitOf(what)))
}

// limitOf is the bound of the series that count what.
func limitOf(what string) int {
	switch what {
	case "gaps":
		return maxCurvePoints
	case "outlying requests":
		return maxOutliers
	}
	return maxScatter
}

// thousands writes n with a comma between thousands: 300,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
