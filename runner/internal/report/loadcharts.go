package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// The names of the load charts; the latency chart has one per kind of loop.
const (
	latencyConcurrencyChart = "latency_vs_concurrency"
	latencyRateChart        = "latency_vs_rate"
	kneeChartName           = "throughput_vs_latency"
)

// loadChartNames lists every load chart, so that a report without one removes an earlier
// report's files.
var loadChartNames = []string{latencyConcurrencyChart, latencyRateChart, kneeChartName}

// loadChartKinds returns the load charts that the runs call for, in page order: the latency
// chart of each kind of loop some run has, then the throughput chart. It is empty for runs
// without load points.
func loadChartKinds(runs []*run) []chartKind {
	if !hasLoad(runs) {
		return nil
	}
	var out []chartKind
	for _, m := range []record.LoadMode{record.LoadClosed, record.LoadOpen} {
		if !hasMode(runs, m) {
			continue
		}
		_, level := modeWords(m)
		name := latencyConcurrencyChart
		if m == record.LoadOpen {
			name = latencyRateChart
		}
		out = append(out, chartKind{name, "Latency against " + level,
			func(runs []*run) (*figure, string) { return latencyLoadChart(runs, m) }})
	}
	return append(out, chartKind{kneeChartName, "Throughput against latency", kneeChart})
}

func hasMode(runs []*run, m record.LoadMode) bool {
	for _, r := range runs {
		for _, s := range r.load {
			if s.mode == m {
				return true
			}
		}
	}
	return false
}

// curvePoint is one plotted point of a load chart.
type curvePoint struct {
	x, y  float64
	label string // the level, on the throughput chart
	thin  bool   // a p99 from too few requests to be a tail
}

// curve is one line of a load chart exactly as it is plotted: the points of one series of one
// run, for one statistic, in one panel.
type curve struct {
	r      *run
	series string // the series' name, as the legend gives it
	color  int    // index into the palette, shared by the runs' series of one name
	panel  int    // 0 the left panel, 1 the right
	stat   string // "p50" or "p99"
	pts    []curvePoint
}

// seriesColors numbers the series names of the runs in order of first appearance.
func seriesColors(names []string) map[string]int {
	out := map[string]int{}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			out[n] = len(out)
		}
	}
	return out
}

// latencyCurves returns the curves of the latency chart of loop m: TTFT (panel 0) and TPOT
// per token (panel 1), each at p50 and p99, against the level of every load point that has
// the metric.
func latencyCurves(runs []*run, m record.LoadMode) []curve {
	var names []string
	for _, r := range runs {
		for _, s := range r.load {
			if s.mode == m {
				names = append(names, s.name)
			}
		}
	}
	colors := seriesColors(names)
	var out []curve
	for _, r := range runs {
		for _, s := range r.load {
			if s.mode != m {
				continue
			}
			for panel := range 2 {
				for _, stat := range []string{"p50", "p99"} {
					c := curve{r: r, series: s.name, color: colors[s.name], panel: panel, stat: stat}
					for _, p := range s.pts {
						sum := p.ttft
						if panel == 1 {
							sum = p.tpot
						}
						y := sum.Median
						if stat == "p99" {
							y = sum.P99
						}
						if math.IsNaN(y) {
							continue
						}
						c.pts = append(c.pts, curvePoint{x: p.level, y: y, label: p.levelText(), thin: stat == "p99" && p99Thin(sum)})
					}
					if len(c.pts) > 0 {
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// kneeName is how the throughput chart names a series: with its loop when the runs have both.
func kneeName(s *loadSeries, both bool) string {
	if !both {
		return s.name
	}
	loop, _ := modeWords(s.mode)
	return loop + ": " + s.name
}

// kneeCurves returns the curves of the throughput chart: output tokens per second (x) against
// TTFT p50 (panel 0) and p99 (panel 1), one point per load point in load order, labelled with
// its level. A load point without a measured window or without a TTFT is left out.
func kneeCurves(runs []*run) []curve {
	both := hasMode(runs, record.LoadClosed) && hasMode(runs, record.LoadOpen)
	var names []string
	for _, r := range runs {
		for _, s := range r.load {
			names = append(names, kneeName(s, both))
		}
	}
	colors := seriesColors(names)
	var out []curve
	for _, r := range runs {
		for _, s := range r.load {
			name := kneeName(s, both)
			for panel, stat := range []string{"p50", "p99"} {
				c := curve{r: r, series: name, color: colors[name], panel: panel, stat: stat}
				for _, p := range s.pts {
					y := p.ttft.Median
					if stat == "p99" {
						y = p.ttft.P99
					}
					x := p.row.OutputTokensPerS
					if math.IsNaN(x) || math.IsNaN(y) {
						continue
					}
					c.pts = append(c.pts, curvePoint{x: x, y: y, label: p.levelText(), thin: stat == "p99" && p99Thin(p.ttft)})
				}
				if len(c.pts) > 0 {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// maxPoints returns the most points of any curve.
func maxPoints(cs []curve) int {
	n := 0
	for _, c := range cs {
		n = max(n, len(c.pts))
	}
	return n
}

// anyThin reports whether some point of the curves is a p99 from too few requests.
func anyThin(cs []curve) bool {
	for _, c := range cs {
		for _, p := range c.pts {
			if p.thin {
				return true
			}
		}
	}
	return false
}

// seriesNames lists the curves' series names once each, in colour order.
func seriesNames(cs []curve) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.series] {
			seen[c.series] = true
			out = append(out, c.series)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return colorOfName(cs, out[i]) < colorOfName(cs, out[j]) })
	return out
}

func colorOfName(cs []curve, name string) int {
	for _, c := range cs {
		if c.series == name {
			return c.color
		}
	}
	return 0
}

// thinNote is what a caption says about the points drawn as a cross.
const thinNote = " A × marks a p99 from too few requests to be a tail (it lies between the two largest values, " +
	"as it does below 102 requests): it is drawn, but read it as the slowest request, not as the 99th percentile."

// latencyLoadChart draws TTFT and TPOT per token, p50 and p99, against the level of loop m. It
// returns a reason instead when the load points do not vary the level.
func latencyLoadChart(runs []*run, m record.LoadMode) (*figure, string) {
	_, level := modeWords(m)
	curves := latencyCurves(runs, m)
	levels := map[float64]bool{}
	for _, c := range curves {
		for _, p := range c.pts {
			levels[p.x] = true
		}
	}
	if len(curves) == 0 {
		return nil, fmt.Sprintf("no load point of the %s has a measured request that succeeded", level)
	}
	if len(levels) < 2 {
		return nil, fmt.Sprintf("the load points do not vary the %s (%d distinct value)", level, len(levels))
	}
	name, xLabel := latencyConcurrencyChart, "concurrency (requests in flight)"
	what := "the concurrency, the requests a closed loop keeps in flight"
	if m == record.LoadOpen {
		name, xLabel = latencyRateChart, "target rate (requests/s)"
		what = "the target rate of an open loop, the requests per second its arrival process draws (the table gives the rate achieved)"
	}
	title := "Latency against " + level
	c := &figure{Name: name, Title: title, W: 10 * inch, H: 4.6 * inch}
	c.Caption = fmt.Sprintf("Each point is one load point: the median (solid line, filled point) and the 99th percentile "+
		"(dashed line, hollow point) of TTFT (left) and of TPOT per token (right) over its measured requests that "+
		"succeeded, against %s. One colour per series, the configs that differ only in their %s (%s).",
		what, level, joinShort(seriesNames(curves)))
	if anyThin(curves) {
		c.Caption += thinNote
	}
	if len(runs) > 1 {
		c.Caption += " The old folder's lines are paler."
	}
	xs := sortedKeys(levels)
	c.draw = func(dc chart.Canvas) {
		left := newPlot("TTFT", xLabel, "TTFT (ms)")
		right := newPlot("TPOT per token", xLabel, "TPOT per token (ms)")
		for _, p := range []*chart.Plot{left, right} {
			p.Y.Min = 0
			levelAxis(&p.X, xs)
		}
		leg := &chart.Legend{}
		legended := map[string]bool{}
		for _, cv := range curves {
			plotCurve(left, right, cv)
			addSeriesKey(leg, legended, cv)
		}
		for _, stat := range []string{"p50", "p99"} {
			l, g := seriesThumb(curve{stat: stat, color: -1})
			leg.Add(stat, l, g)
		}
		addThinKey(leg, curves)
		twoPanels(dc, leg, left, right)
	}
	return c, ""
}

// kneeChart draws output tokens per second against TTFT p50 and p99, one line per series in
// load order: where it bends upward, more load buys latency and little throughput. It returns
// a reason instead when no series has two load points with a throughput.
func kneeChart(runs []*run) (*figure, string) {
	curves := kneeCurves(runs)
	if maxPoints(curves) < 2 {
		return nil, "no series has two load points with a measured window and a TTFT"
	}
	c := &figure{Name: kneeChartName, Title: "Throughput against latency", W: 10 * inch, H: 4.6 * inch}
	c.Caption = fmt.Sprintf("Each point is one load point: its output tokens per second (the tokens of its successful "+
		"measured requests over its measured window, as in load.csv) against the median (left) and the 99th percentile "+
		"(right) of its TTFT, labelled with its level (the concurrency, or requests per second for an open loop). One "+
		"line per series, joined in order of load (%s). Where a line turns upward, more load buys little throughput "+
		"and much latency: the knee.", joinShort(seriesNames(curves)))
	if anyThin(curves) {
		c.Caption += thinNote
	}
	if len(runs) > 1 {
		c.Caption += " The old folder's lines are paler."
	}
	c.draw = func(dc chart.Canvas) {
		left := newPlot("TTFT p50", "output tokens/s", "TTFT p50 (ms)")
		right := newPlot("TTFT p99", "output tokens/s", "TTFT p99 (ms)")
		for _, p := range []*chart.Plot{left, right} {
			p.X.Min, p.Y.Min = 0, 0
		}
		leg := &chart.Legend{}
		legended := map[string]bool{}
		for _, cv := range curves {
			// Both panels show one statistic each, so both draw it solid.
			cv.stat = "p50"
			p := plotCurve(left, right, cv)
			labels := &chart.Labels{Offset: chart.Point{X: 4, Y: -3},
				Style: chart.TextStyle{Size: chart.TickLabelSize, Color: color.Gray{Y: 0x30}}}
			for _, pt := range cv.pts {
				labels.XYs = append(labels.XYs, chart.Point{X: pt.x, Y: pt.y})
				labels.Texts = append(labels.Texts, pt.label)
			}
			p.Add(labels)
			addSeriesKey(leg, legended, cv)
		}
		addThinKey(leg, curves)
		// Room for the labels of the last points.
		left.X.Max *= 1.08
		right.X.Max *= 1.08
		twoPanels(dc, leg, left, right)
	}
	return c, ""
}

// curveColor is the colour of a curve: its series' colour, paler for the old run of a
// comparison, or dark grey for a legend entry that stands for a statistic (color −1).
func curveColor(cv curve) color.Color {
	if cv.color < 0 {
		return color.Gray{Y: 0x30}
	}
	if cv.r != nil && cv.r.role == "old" {
		return withAlpha(colorOf(cv.color), 0.45)
	}
	return colorOf(cv.color)
}

// curveLine returns the line and the points of a curve: p50 solid with filled points, p99
// dashed with hollow ones; a thin p99 is left for thinPoints to draw.
func curveLine(cv curve) (*chart.Line, *chart.Scatter) {
	var xys, glyphs []chart.Point
	for _, p := range cv.pts {
		xys = append(xys, chart.Point{X: p.x, Y: p.y})
		if !p.thin {
			glyphs = append(glyphs, chart.Point{X: p.x, Y: p.y})
		}
	}
	col := curveColor(cv)
	ln := line(xys, col, 1.6, nil)
	sc := scatter(glyphs, chart.Dot, col, 2.6)
	if cv.stat == "p99" {
		ln.Style.Dashes = []float64{5, 3}
		ln.Style.Width = 1.2
		sc.Marker.Shape = chart.Ring
	}
	return ln, sc
}

// thinPoints returns the crosses of a curve's thin p99 points, or nil when it has none.
func thinPoints(cv curve) *chart.Scatter {
	var xys []chart.Point
	for _, p := range cv.pts {
		if p.thin {
			xys = append(xys, chart.Point{X: p.x, Y: p.y})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	return scatter(xys, chart.Cross, curveColor(cv), 3)
}

// seriesThumb returns the legend samples of a curve: a p50 style line and point.
func seriesThumb(cv curve) (chart.Thumb, chart.Thumb) {
	cv.pts = []curvePoint{{}}
	if cv.stat == "" {
		cv.stat = "p50"
	}
	if cv.color >= 0 && cv.stat == "p99" {
		cv.stat = "p50"
	}
	ln, sc := curveLine(cv)
	return ln, sc
}

// levelAxis puts a tick at every level and, when the levels span a factor of eight or more (a
// doubling sweep, 1 to 256), uses a logarithmic scale so that the low levels do not crowd.
func levelAxis(a *chart.Axis, levels []float64) {
	ticks := make([]chart.Tick, len(levels))
	for i, v := range levels {
		ticks[i] = chart.Tick{Value: v, Label: trimNumber(v)}
	}
	a.Ticks = chart.FixedTicks(ticks)
	lo, hi := levels[0], levels[len(levels)-1]
	if lo > 0 && hi/lo >= 8 {
		a.Log = true
		a.Min, a.Max = lo/1.25, hi*1.25
		return
	}
	pad := (hi - lo) * 0.05
	a.Min, a.Max = math.Max(0, lo-pad), hi+pad
}

func sortedKeys(m map[float64]bool) []float64 {
	out := make([]float64, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	sort.Float64s(out)
	return out
}

// twoPanels draws two plots side by side with the legend placed by placeLegend.
func twoPanels(dc chart.Canvas, leg *chart.Legend, left, right *chart.Plot) {
	area := placeLegend(dc, leg)
	chart.DrawGrid(dc, [][]*chart.Plot{{left, right}}, area, chart.Grid{PadX: 18, PadLeft: 2, PadRight: 2})
}

// plotCurve draws cv in its panel of a two-panel chart, left or right, with a cross at each
// thin p99, and returns that panel.
func plotCurve(left, right *chart.Plot, cv curve) *chart.Plot {
	p := left
	if cv.panel == 1 {
		p = right
	}
	ln, pts := curveLine(cv)
	p.Add(ln, pts)
	if thin := thinPoints(cv); thin != nil {
		p.Add(thin)
	}
	return p
}

// addSeriesKey adds cv's series (and folder) to the legend the first time it is met: a series
// draws several curves, one a panel and statistic, but has one key. legended holds the keys
// already added.
func addSeriesKey(leg *chart.Legend, legended map[string]bool, cv curve) {
	key := cv.series + cv.r.suffix()
	if !legended[key] {
		legended[key] = true
		l, g := seriesThumb(cv)
		leg.Add(key, l, g)
	}
}

// addThinKey adds the key of the cross that marks a thin p99, where some curve has one.
func addThinKey(leg *chart.Legend, curves []curve) {
	if anyThin(curves) {
		leg.Add("p99, few requests", chart.MarkerThumb{Shape: chart.Cross, Color: color.Gray{Y: 0x30}, Radius: 3})
	}
}
