package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	mstats "github.com/montanaflynn/stats"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// configRows returns the config labels of the runs, one per row of a per-config chart: the
// newest run's configs in expansion order, then those that only an older run has.
func configRows(runs []*run) []string {
	var out []string
	seen := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- {
		for _, cd := range runs[i].configs {
			if l := cd.label(); !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

// runColor is the colour of a whole run in charts that colour by run: blue alone or new, grey
// for the old run of a comparison.
func runColor(r *run) color.RGBA {
	if r.role == "old" {
		return color.RGBA{0x8a, 0x8a, 0x8a, 0xff}
	}
	return palette[0]
}

// rowsHeight is the height of a chart with one row per config.
func rowsHeight(rows, runs int) vg.Length {
	per := 0.4 * vg.Inch
	if runs > 1 {
		per = 0.55 * vg.Inch
	}
	return max(3.2*vg.Inch, vg.Length(rows)*per+1.5*vg.Inch)
}

// rowOffsets returns the positions of each run's box around a row's centre, in row units (the
// old run above the new one), and the thickness of one box, in row units.
func rowOffsets(runs int) (offs []float64, thick float64) {
	if runs == 1 {
		return []float64{0}, 0.75
	}
	return []float64{0.21, -0.21}, 0.38
}

// ttftBoxChart draws one horizontal box per config (and run): the quartiles of TTFT, the
// median, whiskers to the furthest value within 1.5 IQR, and the values beyond as points.
func ttftBoxChart(runs []*run) (*chart, string) {
	rows := configRows(runs)
	any := false
	for _, r := range runs {
		for _, cd := range r.configs {
			any = any || len(values(cd.ok, ttftOf)) > 0
		}
	}
	if !any {
		return nil, "no measured request has a TTFT"
	}
	c := &chart{Name: "ttft_distribution", Title: "Distribution of time to first token per config",
		W: 7.5 * vg.Inch, H: rowsHeight(len(rows), len(runs))}
	c.Caption = "One box per config: the box spans the 25th to 75th percentile of TTFT over the measured requests, " +
		"the bar inside is the median, whiskers reach the furthest value within 1.5 interquartile ranges, and points " +
		"beyond them are drawn one by one."
	if len(runs) > 1 {
		c.Caption += " Grey boxes are the old folder, blue the new one."
	}
	c.draw = func(dc draw.Canvas) {
		p := newPlot(c.Title, "TTFT (ms)", "")
		p.X.Min = 0
		leg := newLegend()
		offs, thick := rowOffsets(len(runs))
		// Points per row unit: the data area is about the canvas height less the title and
		// the axis.
		pitch := (c.H - 1.1*vg.Inch) / vg.Length(len(rows))
		for k, r := range runs {
			col := runColor(r)
			var first *plotter.BoxPlot
			for i, label := range rows {
				cd := r.byLabel[label]
				if cd == nil {
					continue
				}
				vs := values(cd.ok, ttftOf)
				if len(vs) == 0 {
					continue
				}
				pos := float64(len(rows)-1-i) + offs[k]
				b, err := plotter.NewBoxPlot(vg.Length(thick)*pitch, pos, plotter.Values(vs))
				if err != nil {
					continue
				}
				b.Horizontal = true
				b.FillColor = withAlpha(col, 0.25)
				b.BoxStyle.Color, b.MedianStyle.Color = col, col
				b.MedianStyle.Width = vg.Points(2)
				b.WhiskerStyle.Color = col
				b.GlyphStyle.Color, b.GlyphStyle.Radius = col, vg.Points(1.6)
				p.Add(b)
				if first == nil {
					first = b
				}
			}
			if first != nil && len(runs) > 1 {
				sw, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}})
				sw.Color, sw.LineStyle.Color = withAlpha(col, 0.25), col
				leg.Add(r.role+": "+r.f.Name(), sw)
			}
		}
		p.NominalY(reversed(rows)...)
		p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
		p.X.Max *= 1.03 // room for a point at the largest value
		legendBeside(dc, p, leg)
	}
	return c, ""
}

func ttftOf(q *record.Request) (float64, bool) { return msOf(q.TTFT) }

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// gapCDFChart draws the empirical cumulative distribution of the gaps between consecutive
// text events, pooled over each config's measured requests.
func gapCDFChart(runs []*run) (*chart, string) {
	type curve struct {
		r     *run
		label string
		row   int
		gaps  []float64
	}
	rows := configRows(runs)
	rowOf := map[string]int{}
	for i, l := range rows {
		rowOf[l] = i
	}
	var curves []curve
	var cut, longest float64
	for _, r := range runs {
		for _, cd := range r.configs {
			var g []float64
			for _, q := range cd.ok {
				g = append(g, gaps(q)...)
			}
			if len(g) == 0 {
				continue
			}
			sort.Float64s(g)
			p99, _ := mstats.Percentile(mstats.Float64Data(g), 99)
			cut = math.Max(cut, p99)
			longest = math.Max(longest, g[len(g)-1])
			curves = append(curves, curve{r: r, label: cd.label(), row: rowOf[cd.label()], gaps: g})
		}
	}
	if len(curves) == 0 {
		return nil, "no measured request has two text events"
	}
	cut *= 1.15
	if cut <= 0 { // every gap is zero: events that arrived together
		cut = 1
	}
	var labels []string // one legend entry per config that has a curve, in row order
	for _, l := range rows {
		for _, cv := range curves {
			if cv.label == l {
				labels = append(labels, l)
				break
			}
		}
	}
	entries := len(labels)
	if len(runs) > 1 {
		entries += 2
	}
	c := &chart{Name: "itl_distribution", Title: "Distribution of the gaps between text events per config",
		W: 7.5 * vg.Inch, H: 3.6*vg.Inch + vg.Length(entries)*0.17*vg.Inch}
	c.Caption = fmt.Sprintf("Empirical cumulative distribution of the time between consecutive text events (the raw "+
		"inter-token latency as the client sees it), pooled over each config's measured requests: the height at x is the "+
		"share of gaps no longer than x. A vertical step means many gaps of one length; two steps mean two kinds of "+
		"gap, such as events that carry one token and events that carry several. The x axis stops at 1.15 × the "+
		"largest 99th percentile (%.3g ms); the longest gap is %.3g ms.", cut, longest)
	c.draw = func(dc draw.Canvas) {
		p := newPlot(c.Title, "gap between text events (ms)", "share of gaps ≤ x")
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, cut, 0, 1
		leg := newLegend()
		for _, cv := range curves {
			xys := make(plotter.XYs, 0, len(cv.gaps)+1)
			xys = append(xys, plotter.XY{X: 0, Y: 0})
			for i, g := range cv.gaps {
				xys = append(xys, plotter.XY{X: math.Min(g, cut), Y: float64(i+1) / float64(len(cv.gaps))})
			}
			l, _ := plotter.NewLine(xys)
			l.StepStyle = plotter.PostStep
			l.Color, l.Width = colorOf(cv.row), vg.Points(1.5)
			l.Dashes = seriesDashes(cv.row)
			if cv.r.role == "old" {
				l.Dashes = oldDashes
			}
			p.Add(l)
		}
		// Colour says the config and dashes the folder, so the legend lists each once.
		for _, label := range labels {
			row := rowOf[label]
			l, _ := plotter.NewLine(plotter.XYs{})
			l.Color, l.Width, l.Dashes = colorOf(row), vg.Points(1.5), seriesDashes(row)
			leg.Add(label, l)
		}
		if len(runs) > 1 {
			for _, r := range runs {
				l, _ := plotter.NewLine(plotter.XYs{})
				l.Color, l.Width = color.Gray{Y: 0x50}, vg.Points(1.5)
				if r.role == "old" {
					l.Dashes = oldDashes
				}
				leg.Add(r.role+": "+r.f.Name(), l)
			}
		}
		legendBeside(dc, p, leg)
	}
	return c, ""
}
