package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
			func(runs []*run) (*chart, string) { return latencyLoadChart(runs, m) }})
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
func latencyLoadChart(runs []*run, m record.LoadMode) (*chart, string) {
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
	c := &chart{Name: name, Title: title, W: 10 * vg.Inch, H: 4.6 * vg.Inch}
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
	c.draw = func(dc draw.Canvas) {
		left := newPlot("TTFT", xLabel, "TTFT (ms)")
		right := newPlot("TPOT per token", xLabel, "TPOT per token (ms)")
		for _, p := range []*plot.Plot{left, right} {
			p.Y.Min = 0
			levelAxis(&p.X, xs)
		}
		leg := newLegend()
		legended := map[string]bool{}
		for _, cv := range curves {
			p := left
			if cv.panel == 1 {
				p = right
			}
			line, pts := curveLine(cv)
			p.Add(line, pts)
			if thin := thinPoints(cv); thin != nil {
				p.Add(thin)
			}
			key := cv.series + cv.r.suffix()
			if !legended[key] {
				legended[key] = true
				l, g := seriesThumb(cv)
				leg.Add(key, l, g)
			}
		}
		for _, stat := range []string{"p50", "p99"} {
			l, g := seriesThumb(curve{stat: stat, color: -1})
			leg.Add(stat, l, g)
		}
		if anyThin(curves) {
			g, _ := plotter.NewScatter(plotter.XYs{{}})
			g.Shape, g.Color, g.Radius = draw.CrossGlyph{}, color.Gray{Y: 0x30}, vg.Points(3)
			leg.Add("p99, few requests", g)
		}
		twoPanels(dc, leg, left, right)
	}
	return c, ""
}

// kneeChart draws output tokens per second against TTFT p50 and p99, one line per series in
// load order: where it bends upward, more load buys latency and little throughput. It returns
// a reason instead when no series has two load points with a throughput.
func kneeChart(runs []*run) (*chart, string) {
	curves := kneeCurves(runs)
	if maxPoints(curves) < 2 {
		return nil, "no series has two load points with a measured window and a TTFT"
	}
	c := &chart{Name: kneeChartName, Title: "Throughput against latency", W: 10 * vg.Inch, H: 4.6 * vg.Inch}
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
	c.draw = func(dc draw.Canvas) {
		left := newPlot("TTFT p50", "output tokens/s", "TTFT p50 (ms)")
		right := newPlot("TTFT p99", "output tokens/s", "TTFT p99 (ms)")
		for _, p := range []*plot.Plot{left, right} {
			p.X.Min, p.Y.Min = 0, 0
		}
		leg := newLegend()
		legended := map[string]bool{}
		for _, cv := range curves {
			p := left
			if cv.panel == 1 {
				p = right
			}
			// Both panels show one statistic each, so both draw it solid.
			cv.stat = "p50"
			line, pts := curveLine(cv)
			p.Add(line, pts)
			if thin := thinPoints(cv); thin != nil {
				p.Add(thin)
			}
			labels := plotter.XYLabels{}
			for _, pt := range cv.pts {
				labels.XYs = append(labels.XYs, plotter.XY{X: pt.x, Y: pt.y})
				labels.Labels = append(labels.Labels, pt.label)
			}
			if l, err := plotter.NewLabels(labels); err == nil {
				for i := range l.TextStyle {
					l.TextStyle[i].Font = left.Legend.TextStyle.Font
					l.TextStyle[i].Color = color.Gray{Y: 0x30}
				}
				l.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(3)}
				p.Add(l)
			}
			key := cv.series + cv.r.suffix()
			if !legended[key] {
				legended[key] = true
				l, g := seriesThumb(cv)
				leg.Add(key, l, g)
			}
		}
		if anyThin(curves) {
			g, _ := plotter.NewScatter(plotter.XYs{{}})
			g.Shape, g.Color, g.Radius = draw.CrossGlyph{}, color.Gray{Y: 0x30}, vg.Points(3)
			leg.Add("p99, few requests", g)
		}
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
func curveLine(cv curve) (*plotter.Line, *plotter.Scatter) {
	var xys, glyphs plotter.XYs
	for _, p := range cv.pts {
		xys = append(xys, plotter.XY{X: p.x, Y: p.y})
		if !p.thin {
			glyphs = append(glyphs, plotter.XY{X: p.x, Y: p.y})
		}
	}
	line, _ := plotter.NewLine(xys)
	col := curveColor(cv)
	line.Color, line.Width = col, vg.Points(1.6)
	sc, _ := plotter.NewScatter(glyphs)
	sc.Color, sc.Radius, sc.Shape = col, vg.Points(2.6), draw.CircleGlyph{}
	if cv.stat == "p99" {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		line.Width = vg.Points(1.2)
		sc.Shape = draw.RingGlyph{}
	}
	return line, sc
}

// thinPoints returns the crosses of a curve's thin p99 points, or nil when it has none.
func thinPoints(cv curve) *plotter.Scatter {
	var xys plotter.XYs
	for _, p := range cv.pts {
		if p.thin {
			xys = append(xys, plotter.XY{X: p.x, Y: p.y})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	sc, _ := plotter.NewScatter(xys)
	sc.Color, sc.Radius, sc.Shape = curveColor(cv), vg.Points(3), draw.CrossGlyph{}
	return sc
}

// seriesThumb returns the legend thumbnails of a curve: a p50 style line and point.
func seriesThumb(cv curve) (plot.Thumbnailer, plot.Thumbnailer) {
	cv.pts = []curvePoint{{}}
	if cv.stat == "" {
		cv.stat = "p50"
	}
	if cv.color >= 0 && cv.stat == "p99" {
		cv.stat = "p50"
	}
	return curveLine(cv)
}

// levelAxis puts a tick at every level and, when the levels span a factor of eight or more (a
// doubling sweep, 1 to 256), uses a logarithmic scale so that the low levels do not crowd.
func levelAxis(a *plot.Axis, levels []float64) {
	ticks := make([]plot.Tick, len(levels))
	for i, v := range levels {
		ticks[i] = plot.Tick{Value: v, Label: trimNumber(v)}
	}
	a.Tick.Marker = plot.ConstantTicks(ticks)
	lo, hi := levels[0], levels[len(levels)-1]
	if lo > 0 && hi/lo >= 8 {
		a.Scale = plot.LogScale{}
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
func twoPanels(dc draw.Canvas, leg plot.Legend, left, right *plot.Plot) {
	area := placeLegend(dc, leg)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadLeft: vg.Points(2), PadRight: vg.Points(2)}
	cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, area)
	left.Draw(cs[0][0])
	right.Draw(cs[0][1])
}
