package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	mstats "github.com/montanaflynn/stats"

	"github.com/onelayerdown/runner/runner/internal/chart"
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

// rowsHeight is the height of a chart with one row per config, in points.
func rowsHeight(rows, runs int) float64 {
	per := 0.4 * inch
	if runs > 1 {
		per = 0.55 * inch
	}
	return max(3.2*inch, float64(rows)*per+1.5*inch)
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
func ttftBoxChart(runs []*run) (*figure, string) {
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
	c := &figure{Name: "ttft_distribution", Title: "Distribution of time to first token per config",
		W: 7.5 * inch, H: rowsHeight(len(rows), len(runs))}
	c.Caption = "One box per config: the box spans the 25th to 75th percentile of TTFT over the measured requests, " +
		"the bar inside is the median, whiskers reach the furthest value within 1.5 interquartile ranges, and points " +
		"beyond them are drawn one by one."
	if len(runs) > 1 {
		c.Caption += " Grey boxes are the old folder, blue the new one."
	}
	var count drawnCount
	for _, r := range runs {
		for _, cd := range r.configs {
			if vs := values(cd.ok, ttftOf); len(vs) > 0 {
				n := len(outliers(vs))
				count.add(min(n, maxOutliers), n)
			}
		}
	}
	c.Caption += count.caption("outlying requests")
	c.draw = func(dc chart.Canvas) {
		p := newPlot(c.Title, "TTFT (ms)", "")
		p.X.Min = 0
		leg := &chart.Legend{}
		offs, thick := rowOffsets(len(runs))
		for k, r := range runs {
			col := runColor(r)
			var first chart.Thumb
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
				box, marks := boxPlot(vs, pos, thick, col)
				p.Add(box)
				p.Add(marks...)
				if first == nil {
					first = box
				}
			}
			if first != nil && len(runs) > 1 {
				leg.Add(r.role+": "+r.f.Name(), first)
			}
		}
		p.Y.Ticks = nominalTicks(rows)
		p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
		p.X.Max *= 1.03 // room for a point at the largest value
		legendBeside(dc, p, leg)
	}
	return c, ""
}

// boxPlot returns one horizontal box over vs at row position pos, thick rows thick, and the
// marks around it: the box from the lower to the upper quartile, the median, whiskers to the furthest
// values within 1.5 interquartile ranges of the box, and the values beyond as rings. The
// quartiles are the medians of the lower and upper halves of the values.
func boxPlot(vs []float64, pos, thick float64, col color.RGBA) (chart.Boxes, []chart.Item) {
	med, q1, q3 := quartiles(vs)
	lowFence, highFence := q1-1.5*(q3-q1), q3+1.5*(q3-q1)
	adjLow, adjHigh := math.Inf(1), math.Inf(-1)
	var outside []chart.Point
	for _, v := range vs {
		if v < lowFence || v > highFence {
			outside = append(outside, chart.Point{X: v, Y: pos})
			continue
		}
		adjLow, adjHigh = math.Min(adjLow, v), math.Max(adjHigh, v)
	}
	lo, hi := pos-thick/2, pos+thick/2
	capLo, capHi := pos-thick*3/8, pos+thick*3/8
	edge := chart.LineStyle{Color: col, Width: 1}
	box := chart.Boxes{{X0: q1, X1: q3, Y0: lo, Y1: hi, Fill: withAlpha(col, 0.25), Line: edge}}
	nan := math.NaN()
	whiskers := line([]chart.Point{
		{X: adjLow, Y: pos}, {X: q1, Y: pos}, {X: nan, Y: nan},
		{X: q3, Y: pos}, {X: adjHigh, Y: pos}, {X: nan, Y: nan},
		{X: adjLow, Y: capLo}, {X: adjLow, Y: capHi}, {X: nan, Y: nan},
		{X: adjHigh, Y: capLo}, {X: adjHigh, Y: capHi},
	}, col, 0.5, []float64{4, 2})
	median := line([]chart.Point{{X: med, Y: lo}, {X: med, Y: hi}}, col, 2, nil)
	marks := []chart.Item{whiskers, median}
	if len(outside) > 0 {
		marks = append(marks, scatter(sample(outside, maxOutliers), chart.Ring, col, 1.6))
	}
	return box, marks
}

// quartiles returns the median and the lower and upper quartiles of vs: the medians of the
// lower and upper halves of the values.
func quartiles(vs []float64) (med, q1, q3 float64) {
	sorted := append([]float64(nil), vs...)
	sort.Float64s(sorted)
	med, q1, q3 = halfMedian(sorted), sorted[0], sorted[0]
	if len(sorted) > 1 {
		q1, q3 = halfMedian(sorted[:len(sorted)/2]), halfMedian(sorted[len(sorted)/2:])
	}
	return med, q1, q3
}

// outliers returns the values of vs beyond 1.5 interquartile ranges of the box, in order.
func outliers(vs []float64) []float64 {
	_, q1, q3 := quartiles(vs)
	lowFence, highFence := q1-1.5*(q3-q1), q3+1.5*(q3-q1)
	var out []float64
	for _, v := range vs {
		if v < lowFence || v > highFence {
			out = append(out, v)
		}
	}
	return out
}

// halfMedian returns the median of sorted values.
func halfMedian(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// nominalTicks labels the rows of a chart with one row per label, the first row at the top.
func nominalTicks(rows []string) chart.Ticker {
	ts := make([]chart.Tick, len(rows))
	for i, l := range rows {
		ts[i] = chart.Tick{Value: float64(len(rows) - 1 - i), Label: l}
	}
	return chart.FixedTicks(ts)
}

func ttftOf(q *record.Request) (float64, bool) { return msOf(q.TTFT) }

// gapCDFChart draws the empirical cumulative distribution of the gaps between consecutive
// text events, pooled over each config's measured requests.
func gapCDFChart(runs []*run) (*figure, string) {
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
				g = append(g, cd.f.figuresOf(q).gaps...)
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
	c := &figure{Name: "itl_distribution", Title: "Distribution of the gaps between text events per config",
		W: 7.5 * inch, H: 3.6*inch + float64(entries)*0.17*inch}
	c.Caption = fmt.Sprintf("Empirical cumulative distribution of the time between consecutive text events (the raw "+
		"inter-token latency as the client sees it), pooled over each config's measured requests: the height at x is the "+
		"share of gaps no longer than x. A vertical step means many gaps of one length; two steps mean two kinds of "+
		"gap, such as events that carry one token and events that carry several. The x axis stops at 1.15 × the "+
		"largest 99th percentile (%.3g ms); the longest gap is %.3g ms.", cut, longest)
	var count drawnCount
	for _, cv := range curves {
		count.add(min(len(cv.gaps), maxCurvePoints), len(cv.gaps))
	}
	c.Caption += count.caption("gaps")
	c.draw = func(dc chart.Canvas) {
		p := newPlot(c.Title, "gap between text events (ms)", "share of gaps ≤ x")
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, cut, 0, 1
		leg := &chart.Legend{}
		for _, cv := range curves {
			// At most maxCurvePoints steps, evenly spaced in rank, the largest gap included.
			n := len(cv.gaps)
			m := min(n, maxCurvePoints)
			xys := make([]chart.Point, 0, m+1)
			xys = append(xys, chart.Point{X: 0, Y: 0})
			for j := range m {
				i := j
				if m < n {
					i = j * (n - 1) / (m - 1)
				}
				xys = append(xys, chart.Point{X: math.Min(cv.gaps[i], cut), Y: float64(i+1) / float64(n)})
			}
			l := line(xys, colorOf(cv.row), 1.5, seriesDashes(cv.row))
			l.Step = true
			if cv.r.role == "old" {
				l.Style.Dashes = oldDashes
			}
			p.Add(l)
		}
		// Colour says the config and dashes the folder, so the legend lists each once.
		for _, label := range labels {
			row := rowOf[label]
			leg.Add(label, chart.LineThumb{Color: colorOf(row), Width: 1.5, Dashes: seriesDashes(row)})
		}
		if len(runs) > 1 {
			for _, r := range runs {
				th := chart.LineThumb{Color: color.Gray{Y: 0x50}, Width: 1.5}
				if r.role == "old" {
					th.Dashes = oldDashes
				}
				leg.Add(r.role+": "+r.f.Name(), th)
			}
		}
		legendBeside(dc, p, leg)
	}
	return c, ""
}
