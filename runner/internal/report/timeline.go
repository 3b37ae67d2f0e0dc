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
	"github.com/onelayerdown/runner/runner/internal/results"
)

// hasEventTokens reports whether some text event of q says how many tokens it carried.
func hasEventTokens(q *record.Request) bool {
	for _, e := range q.EventList {
		if e.Text && e.Tokens != nil {
			return true
		}
	}
	return false
}

// tokensPerEvent returns the mean number of tokens per text event of a config's requests that
// have per-event counts, and 0 when none has.
func tokensPerEvent(cd *configData) float64 {
	var tokens, events int
	for _, q := range cd.ok {
		for _, e := range q.EventList {
			if e.Text && e.Tokens != nil {
				tokens += *e.Tokens
				events++
			}
		}
	}
	if events == 0 {
		return 0
	}
	return float64(tokens) / float64(events)
}

// timelineConfig picks the config whose timeline tells most about events against tokens: among
// those within 10% of the most tokens per text event (where events carry several tokens, the
// difference shows), the one whose output is nearest to 48 tokens, long enough to show a
// pattern and short enough to see each event. It looks at the newest run.
func timelineConfig(r *run) string {
	const readable = 48
	type cand struct {
		label       string
		ratio, dist float64
	}
	var cands []cand
	top := 0.0
	for _, cd := range r.configs {
		if medianRequest(cd) == nil {
			continue
		}
		var lens []float64
		for _, q := range cd.ok {
			if v, ok := outputTokens(q); ok && q.TextEvents >= 2 {
				lens = append(lens, v)
			}
		}
		c := cand{label: cd.label(), ratio: tokensPerEvent(cd), dist: math.MaxFloat64}
		if len(lens) > 0 {
			c.dist = math.Abs(median(lens) - readable)
		}
		cands = append(cands, c)
		top = math.Max(top, c.ratio)
	}
	best, bestDist := "", math.Inf(1)
	for _, c := range cands {
		if c.ratio >= 0.9*top && c.dist < bestDist {
			best, bestDist = c.label, c.dist
		}
	}
	return best
}

// medianRequest returns the request of a config with the median e2e time among those with two
// text events or more, or nil.
func medianRequest(cd *configData) *record.Request {
	var qs []*record.Request
	for _, q := range cd.ok {
		if q.TextEvents >= 2 && q.E2E != nil && len(q.EventList) > 0 {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil
	}
	sort.SliceStable(qs, func(i, j int) bool { return *qs[i].E2E < *qs[j].E2E })
	return qs[(len(qs)-1)/2]
}

// timelineChart draws one request's events: above, the tokens and the text events received so
// far against time; below, one stem per event at its arrival, as tall as the tokens it carried.
func timelineChart(runs []*run) (*chart, string) {
	newest := runs[len(runs)-1]
	label := timelineConfig(newest)
	if label == "" {
		return nil, "no measured request has two text events and its events recorded"
	}
	type pick struct {
		r *run
		q *record.Request
	}
	var picks []pick
	for _, r := range runs {
		if cd := r.byLabel[label]; cd != nil {
			if q := medianRequest(cd); q != nil {
				picks = append(picks, pick{r, q})
			}
		}
	}
	withTokens := false
	for _, pk := range picks {
		withTokens = withTokens || hasEventTokens(pk.q)
	}
	c := &chart{Name: "request_timeline", Title: "Events against tokens in one request", W: 8 * vg.Inch, H: 6 * vg.Inch}
	var desc []string
	for _, pk := range picks {
		ttft, _ := msOf(pk.q.TTFT)
		tok := "an unknown number of"
		if pk.q.OutputTokens != nil {
			tok = fmt.Sprint(*pk.q.OutputTokens)
		}
		desc = append(desc, fmt.Sprintf("%s%s: %d text events carried %s tokens, TTFT %.1f ms", results.RequestID(pk.q.ConfigID, pk.q.Seq),
			pk.r.suffix(), pk.q.TextEvents, tok, ttft))
	}
	c.Caption = fmt.Sprintf("The request with the median e2e time of config %s (%s). Above: tokens received so far "+
		"(solid) and text events received so far (dashed) against time since the request was sent; where the lines part, "+
		"events carry more than one token, and TPOT per event overstates the time per token. Below: one stem per event "+
		"at its arrival, as tall as the tokens it carried; events without text (role, usage and finish chunks) are grey "+
		"marks on the axis.", label, joinComma(desc))
	if !withTokens {
		c.Caption += " The server did not say how many tokens each event carried, so the stems show text bytes instead."
	}
	c.draw = func(dc draw.Canvas) {
		top := newPlot(fmt.Sprintf("One request of %s: what arrived when", label), "", "received so far")
		bottom := newPlot("", "time since the request was sent (ms)", "tokens in event")
		if !withTokens {
			bottom.Y.Label.Text = "text bytes in event"
		}
		top.Y.Min, bottom.Y.Min = 0, 0
		leg := newLegend()
		for _, pk := range picks {
			old := pk.r.role == "old"
			tokCol, evCol := palette[0], palette[1]
			if old {
				tokCol, evCol = color.RGBA{0x7f, 0xb0, 0xd6, 0xff}, color.RGBA{0xe8, 0xa8, 0x80, 0xff}
			}
			tokens := plotter.XYs{{X: 0, Y: 0}}
			events := plotter.XYs{{X: 0, Y: 0}}
			var stems, tips, other plotter.XYs
			var nTok, nEv float64
			for _, e := range pk.q.EventList {
				t := float64(e.SinceT0) / 1e6
				if !e.Text {
					other = append(other, plotter.XY{X: t, Y: 0})
					continue
				}
				carried := float64(e.TextLen)
				if withTokens {
					if e.Tokens == nil {
						continue
					}
					carried = float64(*e.Tokens)
				}
				nEv++
				nTok += carried
				tokens = append(tokens, plotter.XY{X: t, Y: nTok})
				events = append(events, plotter.XY{X: t, Y: nEv})
				stems = append(stems, plotter.XY{X: t, Y: 0}, plotter.XY{X: t, Y: carried}, plotter.XY{X: t, Y: 0})
				tips = append(tips, plotter.XY{X: t, Y: carried})
			}
			if e2e, ok := msOf(pk.q.E2E); ok {
				tokens = append(tokens, plotter.XY{X: e2e, Y: nTok})
				events = append(events, plotter.XY{X: e2e, Y: nEv})
			}
			lt, _ := plotter.NewLine(tokens)
			lt.StepStyle, lt.Color, lt.Width = plotter.PostStep, tokCol, vg.Points(1.6)
			le, _ := plotter.NewLine(events)
			le.StepStyle, le.Color, le.Width = plotter.PostStep, evCol, vg.Points(1.6)
			le.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			if old {
				lt.Dashes = oldDashes
			}
			top.Add(lt, le)
			what := "tokens"
			if !withTokens {
				what = "text bytes"
			}
			leg.Add(what+" received"+pk.r.suffix(), lt)
			leg.Add("text events received"+pk.r.suffix(), le)
			if len(stems) > 0 {
				ls, _ := plotter.NewLine(stems)
				ls.Color, ls.Width = tokCol, vg.Points(1)
				sc, _ := plotter.NewScatter(tips)
				sc.Color, sc.Radius, sc.Shape = tokCol, vg.Points(2), draw.CircleGlyph{}
				if old {
					sc.Shape = draw.RingGlyph{}
				}
				bottom.Add(ls, sc)
				leg.Add(what+" per event"+pk.r.suffix(), ls, sc)
			}
			if len(other) > 0 {
				so, _ := plotter.NewScatter(other)
				so.Color, so.Radius, so.Shape = color.Gray{Y: 0x70}, vg.Points(2.5), draw.CrossGlyph{}
				bottom.Add(so)
				leg.Add("event without text"+pk.r.suffix(), so)
			}
		}
		// Share the time axis so that the panels line up.
		x0, x1 := min(top.X.Min, bottom.X.Min), max(top.X.Max, bottom.X.Max)
		top.X.Min, top.X.Max, bottom.X.Min, bottom.X.Max = x0, x1, x0, x1
		if withTokens {
			bottom.Y.Tick.Marker = integerTicks{}
		}
		area := placeLegend(dc, leg)
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
		cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, area)
		top.Draw(cs[0][0])
		bottom.Draw(cs[1][0])
	}
	return c, ""
}

// integerTicks marks whole numbers only, for axes that count tokens.
type integerTicks struct{}

var _ plot.Ticker = integerTicks{}

// Ticks returns labelled ticks at whole numbers, at most about six of them.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1
	for (hi-lo)/float64(step) > 6 {
		step *= 2
	}
	var ts []plot.Tick
	for v := int(lo); float64(v) <= hi; v += step {
		if float64(v) >= lo {
			ts = append(ts, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
		}
	}
	return ts
}
