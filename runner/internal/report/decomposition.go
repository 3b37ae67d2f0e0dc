package report

import (
	"math"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/decompose"
)

// decompositionChart draws the points each fit rests on, one per request, with the fitted
// lines: TTFT against prompt tokens on the left, e2e − TTFT against output tokens − 1 on the
// right.
func decompositionChart(runs []*run) (*figure, string) {
	anyFit := false
	sweepColor := map[string]int{}
	for _, r := range runs {
		for _, s := range r.sweeps {
			anyFit = anyFit || s.Prefill.OK() || s.Decode.OK()
			if _, ok := sweepColor[s.Name]; !ok {
				sweepColor[s.Name] = len(sweepColor)
			}
		}
	}
	if !anyFit {
		return nil, "neither fit could be made (see the fit table)"
	}
	c := &figure{Name: "decomposition", Title: "Prefill and decode fits over the measured requests",
		W: 10 * inch, H: 4.4 * inch}
	c.Caption = "Every point is one measured request. Left: TTFT against its prompt tokens, with the line a + b·prompt " +
		"tokens; a is the fixed cost of a request, b the prefill time per prompt token. Right: the time after the first " +
		"text event (e2e − TTFT) against the output tokens after the first, with the line c·(output tokens − 1) through " +
		"the origin; c is the decode time per token. A panel with no line says why in the fit table."
	var count drawnCount
	for _, r := range runs {
		for _, s := range r.sweeps {
			for _, f := range []*decompose.Fit{&s.Prefill, &s.Decode} {
				count.add(min(len(f.X), maxScatter), len(f.X))
			}
		}
	}
	c.Caption += count.caption("points")
	c.draw = func(dc chart.Canvas) {
		left := newPlot("Prefill: TTFT ≈ a + b·prompt tokens", "prompt tokens", "TTFT (ms)")
		right := newPlot("Decode: e2e − TTFT ≈ c·(output tokens − 1)", "output tokens − 1", "e2e − TTFT (ms)")
		left.X.Min, left.Y.Min, right.X.Min, right.Y.Min = 0, 0, 0, 0
		leg := &chart.Legend{}
		havePoints := [2]bool{}
		for _, r := range runs {
			old := r.role == "old"
			for _, s := range r.sweeps {
				col := colorOf(sweepColor[s.Name])
				var thumb []chart.Thumb
				for k, f := range []*decompose.Fit{&s.Prefill, &s.Decode} {
					p := left
					if k == 1 {
						p = right
					}
					if len(f.X) == 0 {
						continue
					}
					havePoints[k] = true
					xys := make([]chart.Point, len(f.X))
					for i := range f.X {
						xys[i] = chart.Point{X: f.X[i], Y: f.Y[i]}
					}
					sc := scatter(sample(xys, maxScatter), chart.Dot, withAlpha(col, 0.55), 1.8)
					if old {
						sc.Marker.Color, sc.Marker.Shape = withAlpha(col, 0.7), chart.Ring
					}
					p.Add(sc)
					if len(thumb) == 0 {
						thumb = append(thumb, sc)
					}
					if !f.OK() {
						continue
					}
					x1 := 0.0
					for _, x := range f.X {
						x1 = math.Max(x1, x)
					}
					fl := &chart.Function{F: f.Line.Predict, XMax: x1, Style: chart.LineStyle{Color: col, Width: 1.6}}
					if old {
						fl.Style.Dashes = oldDashes
					}
					p.Add(fl)
					if len(thumb) == 1 {
						thumb = append(thumb, fl)
					}
				}
				if len(thumb) > 0 {
					leg.Add(s.Name+r.suffix(), thumb...)
				}
			}
		}
		area := placeLegend(dc, leg)
		for k, p := range []*chart.Plot{left, right} {
			if why := notFitted(runs, k); why != "" {
				p.Title += "\nnot fitted: " + why
			}
			if !havePoints[k] {
				p.Message = "no requests to fit"
			}
		}
		chart.DrawGrid(dc, [][]*chart.Plot{{left, right}}, area, chart.Grid{PadX: 18, PadLeft: 2, PadRight: 2})
	}
	return c, ""
}

// notFitted returns why no sweep of any run has fit k (0 prefill, 1 decode), in a short phrase,
// or "" when one has.
func notFitted(runs []*run, k int) string {
	why := ""
	for _, r := range runs {
		for _, s := range r.sweeps {
			f := &s.Prefill
			if k == 1 {
				f = &s.Decode
			}
			if f.OK() {
				return ""
			}
			if why == "" {
				why, _, _ = strings.Cut(f.Skipped, ": ")
			}
		}
	}
	return why
}
