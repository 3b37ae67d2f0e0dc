package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	mstats "github.com/montanaflynn/stats"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// band is the spread drawn around a median: the 5th and 95th percentiles.
const bandLow, bandHigh = 5, 95

// spread returns the 5th percentile, the median and the 95th percentile of xs (linear
// interpolation between closest ranks, as the summary computes percentiles).
func spread(xs []float64) (lo, med, hi float64) {
	d := mstats.Float64Data(xs)
	lo, _ = mstats.Percentile(d, bandLow)
	med, _ = mstats.Median(d)
	hi, _ = mstats.Percentile(d, bandHigh)
	return lo, med, hi
}

// sweepPoint is one config on a sweep chart: its length and the spread of its metric.
type sweepPoint struct {
	x, lo, med, hi float64
	n              int
}

// sweepLine is the configs that share the values of every axis other than the swept one.
type sweepLine struct {
	name string
	pts  []sweepPoint
}

// sweepLines groups a run's configs into lines by their other axes, each config a point at
// the median of xOf over its requests, with the spread of yOf. Configs without an x or a y
// value are left out.
func sweepLines(r *run, skip []string, xOf, yOf func(*record.Request) (float64, bool)) []sweepLine {
	var lines []*sweepLine
	byName := map[string]*sweepLine{}
	for _, cd := range r.configs {
		xs, ys := values(cd.ok, xOf), values(cd.ok, yOf)
		if len(xs) == 0 || len(ys) == 0 {
			continue
		}
		name := otherAxesName(cd.cfg, skip)
		l := byName[name]
		if l == nil {
			l = &sweepLine{name: name}
			byName[name] = l
			lines = append(lines, l)
		}
		lo, med, hi := spread(ys)
		x, _ := mstats.Median(mstats.Float64Data(xs))
		l.pts = append(l.pts, sweepPoint{x: x, lo: lo, med: med, hi: hi, n: len(ys)})
	}
	out := make([]sweepLine, len(lines))
	for i, l := range lines {
		sort.SliceStable(l.pts, func(a, b int) bool { return l.pts[a].x < l.pts[b].x })
		out[i] = *l
	}
	return out
}

// sweepSpec describes one of the two sweep charts.
type sweepSpec struct {
	name, title, xLabel, yLabel string
	axis                        string   // what is swept, for messages: "prompt length"
	fromZero                    bool     // start the y axis at zero
	skip                        []string // axis paths that make the x value
	xOf, yOf                    func(*record.Request) (float64, bool)
	// fit returns the fitted curve of a sweep over [x0, x1] and its legend text, or ok false.
	fit func(s *decompose.Sweep) (f func(x float64) float64, what string, ok bool)
}

// sweepChart draws the median of a metric against a length, with a 5–95% band, one line per
// value of the other axes, and the least-squares fit of each sweep as a thin dashed line. It
// returns a reason instead when no run has two distinct lengths.
func sweepChart(runs []*run, s sweepSpec) (*figure, string) {
	type drawn struct {
		r     *run
		lines []sweepLine
	}
	var all []drawn
	xs := map[float64]bool{}
	colors := map[string]int{}
	var names []string
	for _, r := range runs {
		d := drawn{r: r, lines: sweepLines(r, s.skip, s.xOf, s.yOf)}
		for _, l := range d.lines {
			if _, ok := colors[l.name]; !ok {
				colors[l.name] = len(colors)
				names = append(names, l.name)
			}
			for _, p := range l.pts {
				xs[p.x] = true
			}
		}
		all = append(all, d)
	}
	if len(xs) < 2 {
		return nil, fmt.Sprintf("the configs do not vary the %s (%d distinct value)", s.axis, len(xs))
	}
	c := &figure{Name: s.name, Title: s.title, W: 7.5 * inch, H: 4.6 * inch}
	c.draw = func(dc chart.Canvas) {
		p := newPlot(s.title, s.xLabel, s.yLabel)
		if s.fromZero {
			p.Y.Min = 0
		}
		leg := &chart.Legend{}
		for _, d := range all {
			old := d.r.role == "old"
			for _, l := range d.lines {
				col := colorOf(colors[l.name])
				alpha := 0.2
				if old {
					alpha = 0.1
				}
				var ring []chart.Point
				for _, pt := range l.pts {
					ring = append(ring, chart.Point{X: pt.x, Y: pt.hi})
				}
				for i := len(l.pts) - 1; i >= 0; i-- {
					ring = append(ring, chart.Point{X: l.pts[i].x, Y: l.pts[i].lo})
				}
				band := &chart.Polygon{XYs: ring, Fill: withAlpha(col, alpha)}
				var med []chart.Point
				for _, pt := range l.pts {
					med = append(med, chart.Point{X: pt.x, Y: pt.med})
				}
				ln := line(med, col, 1.6, seriesDashes(colors[l.name]))
				pts := scatter(med, chart.Dot, col, 2.4)
				if old {
					ln.Style.Dashes = oldDashes
					pts.Marker.Shape = chart.Ring
				}
				p.Add(band, ln, pts)
				leg.Add(l.name+d.r.suffix(), ln, pts)
			}
		}
		// The fits go on top, across the lengths each sweep covers.
		for _, d := range all {
			for i := range d.r.sweeps {
				sw := &d.r.sweeps[i]
				f, what, ok := s.fit(sw)
				if !ok {
					continue
				}
				x0, x1 := math.Inf(1), math.Inf(-1)
				for _, l := range d.lines {
					for _, pt := range l.pts {
						x0, x1 = math.Min(x0, pt.x), math.Max(x1, pt.x)
					}
				}
				fl := &chart.Function{F: f, XMin: x0, XMax: x1,
					Style: chart.LineStyle{Color: color.Gray{Y: 0x20}, Width: 1, Dashes: []float64{2, 2}}}
				if d.r.role == "old" {
					fl.Style.Color = color.Gray{Y: 0x90}
				}
				p.Add(fl)
				label := what
				if len(d.r.sweeps) > 1 {
					label += ": " + sw.Name
				}
				leg.Add(label+d.r.suffix(), fl)
			}
		}
		legendBeside(dc, p, leg)
	}
	c.Caption = s.caption(names)
	return c, ""
}

func (s sweepSpec) caption(lines []string) string {
	return fmt.Sprintf("Each point is one config: the median of its measured requests, with a band from the 5th to the 95th "+
		"percentile. One line per value of the other axes (%s). The thin dashed line is the least-squares fit over the "+
		"sweep's requests (see the fit table).", joinShort(lines))
}

// joinShort lists up to six names and says how many more there are.
func joinShort(names []string) string {
	if len(names) > 6 {
		return fmt.Sprintf("%s and %d more", joinComma(names[:6]), len(names)-6)
	}
	return joinComma(names)
}

func joinComma(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}

// ttftChart is TTFT against prompt tokens: the prefill sweep.
func ttftChart(runs []*run) (*figure, string) {
	return sweepChart(runs, sweepSpec{
		name: "ttft_vs_prompt_tokens", title: "Time to first token against prompt length",
		xLabel: "prompt tokens", yLabel: "TTFT (ms)", axis: "prompt length", fromZero: true,
		skip: []string{"request.prompt_tokens", "request.prompt", "request.prompt_name"},
		xOf:  promptTokens,
		yOf:  func(q *record.Request) (float64, bool) { return msOf(q.TTFT) },
		fit: func(sw *decompose.Sweep) (func(float64) float64, string, bool) {
			if !sw.Prefill.OK() {
				return nil, "", false
			}
			l := sw.Prefill.Line
			return l.Predict, "fit a + b·prompt", true
		},
	})
}

// tpotChart is token-based TPOT against output tokens: the decode sweep.
func tpotChart(runs []*run) (*figure, string) {
	return sweepChart(runs, sweepSpec{
		name: "tpot_vs_output_tokens", title: "Time per output token against output length",
		xLabel: "output tokens", yLabel: "TPOT per token (ms)", axis: "output length",
		skip: []string{"request.max_tokens", "request.min_tokens"},
		xOf:  outputTokens,
		yOf:  func(q *record.Request) (float64, bool) { return msOf(q.TPOTToken) },
		fit: func(sw *decompose.Sweep) (func(float64) float64, string, bool) {
			if !sw.Decode.OK() {
				return nil, "", false
			}
			c := sw.Decode.Line.Slope.Value
			return func(float64) float64 { return c }, "fit c", true
		},
	})
}
