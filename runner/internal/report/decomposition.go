package report

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/onelayerdown/runner/runner/internal/decompose"
)

// decompositionChart draws the points each fit rests on, one per request, with the fitted
// lines: TTFT against prompt tokens on the left, e2e − TTFT against output tokens − 1 on the
// right.
func decompositionChart(runs []*run) (*chart, string) {
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
	c := &chart{Name: "decomposition", Title: "Prefill and decode fits over the measured requests",
		W: 10 * vg.Inch, H: 4.4 * vg.Inch}
	c.Caption = "Every point is one measured request. Left: TTFT against its prompt tokens, with the line a + b·prompt " +
		"tokens; a is the fixed cost of a request, b the prefill time per prompt token. Right: the time after the first " +
		"text event (e2e − TTFT) against the output tokens after the first, with the line c·(output tokens − 1) through " +
		"the origin; c is the decode time per token. A panel with no line says why in the fit table."
	c.draw = func(dc draw.Canvas) {
		left := newPlot("Prefill: TTFT ≈ a + b·prompt tokens", "prompt tokens", "TTFT (ms)")
		right := newPlot("Decode: e2e − TTFT ≈ c·(output tokens − 1)", "output tokens − 1", "e2e − TTFT (ms)")
		left.X.Min, left.Y.Min, right.X.Min, right.Y.Min = 0, 0, 0, 0
		leg := newLegend()
		havePoints := [2]bool{}
		for _, r := range runs {
			old := r.role == "old"
			for _, s := range r.sweeps {
				col := colorOf(sweepColor[s.Name])
				var thumb []plot.Thumbnailer
				for k, f := range []*decompose.Fit{&s.Prefill, &s.Decode} {
					p := left
					if k == 1 {
						p = right
					}
					if len(f.X) == 0 {
						continue
					}
					havePoints[k] = true
					xys := make(plotter.XYs, len(f.X))
					for i := range f.X {
						xys[i] = plotter.XY{X: f.X[i], Y: f.Y[i]}
					}
					sc, _ := plotter.NewScatter(xys)
					sc.Color, sc.Radius, sc.Shape = withAlpha(col, 0.55), vg.Points(1.8), draw.CircleGlyph{}
					if old {
						sc.Color, sc.Shape = withAlpha(col, 0.7), draw.RingGlyph{}
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
					fl := plotter.NewFunction(f.Line.Predict)
					fl.XMin, fl.XMax, fl.Samples = 0, x1, 2
					fl.Color, fl.Width = col, vg.Points(1.6)
					if old {
						fl.Dashes = oldDashes
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
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadLeft: vg.Points(2), PadRight: vg.Points(2)}
		cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, area)
		for k, p := range []*plot.Plot{left, right} {
			if why := notFitted(runs, k); why != "" {
				p.Title.Text += "\nnot fitted: " + why
			}
			if havePoints[k] {
				p.Draw(cs[0][k])
			} else {
				noData(cs[0][k], p.Title.Text, "no requests to fit")
			}
		}
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
