package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/onelayerdown/runner/runner/internal/chart"
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
		e := cd.f.figuresOf(q)
		tokens += e.tokens
		events += e.tokenEvents
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
		if q.TextEvents >= 2 && q.E2E != nil && cd.f.figuresOf(q).n > 0 {
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
func timelineChart(runs []*run) (*figure, string) {
	newest := runs[len(runs)-1]
	label := timelineConfig(newest)
	if label == "" {
		return nil, "no measured request has two text events and its events recorded"
	}
	var picks []timelinePick
	for _, r := range runs {
		if cd := r.byLabel[label]; cd != nil {
			if q := medianRequest(cd); q != nil {
				q, err := r.f.withEvents(q)
				if err != nil {
					return nil, "the events of its request cannot be read: " + err.Error()
				}
				picks = append(picks, timelinePick{r, q})
			}
		}
	}
	withTokens := false
	for _, pk := range picks {
		withTokens = withTokens || hasEventTokens(pk.q)
	}
	c := &figure{Name: "request_timeline", Title: "Events against tokens in one request", W: 8 * inch, H: 6 * inch}
	c.Caption = timelineCaption(label, picks, withTokens)
	c.draw = func(dc chart.Canvas) {
		top := newPlot(fmt.Sprintf("One request of %s: what arrived when", label), "", "received so far")
		bottom := newPlot("", "time since the request was sent (ms)", "tokens in event")
		if !withTokens {
			bottom.Y.Label = "text bytes in event"
		}
		top.Y.Min, bottom.Y.Min = 0, 0
		leg := &chart.Legend{}
		for _, pk := range picks {
			pk.draw(top, bottom, leg, withTokens)
		}
		// Share the time axis so that the panels line up.
		x0, x1 := min(top.X.Min, bottom.X.Min), max(top.X.Max, bottom.X.Max)
		top.X.Min, top.X.Max, bottom.X.Min, bottom.X.Max = x0, x1, x0, x1
		if withTokens {
			bottom.Y.Ticks = chart.IntegerTicks
		}
		area := placeLegend(dc, leg)
		chart.DrawGrid(dc, [][]*chart.Plot{{top}, {bottom}}, area, chart.Grid{PadY: 6, PadTop: 2, PadBottom: 2})
	}
	return c, ""
}

// timelinePick is the request that the timeline shows of one run.
type timelinePick struct {
	r *run
	q *record.Request
}

// timelineCaption describes the timeline of config label's picked requests.
func timelineCaption(label string, picks []timelinePick, withTokens bool) string {
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
	caption := fmt.Sprintf("The request with the median e2e time of config %s (%s). Above: tokens received so far "+
		"(solid) and text events received so far (dashed) against time since the request was sent; where the lines part, "+
		"events carry more than one token, and TPOT per event overstates the time per token. Below: one stem per event "+
		"at its arrival, as tall as the tokens it carried; events without text (role, usage and finish chunks) are grey "+
		"marks on the axis.", label, joinComma(desc))
	if !withTokens {
		caption += " The server did not say how many tokens each event carried, so the stems show text bytes instead."
	}
	return caption
}

// timelinePoints are the series of one request's timeline.
type timelinePoints struct {
	tokens, events []chart.Point // received so far, against time
	stems, tips    []chart.Point // one stem per text event, as tall as what it carried
	other          []chart.Point // the events without text, on the axis
}

// points returns the series of the picked request: tokens carried, or text bytes without
// per-event token counts.
func (pk timelinePick) points(withTokens bool) timelinePoints {
	nan := math.NaN()
	p := timelinePoints{tokens: []chart.Point{{X: 0, Y: 0}}, events: []chart.Point{{X: 0, Y: 0}}}
	var nTok, nEv float64
	for _, e := range pk.q.EventList {
		t := float64(e.SinceT0) / 1e6
		if !e.Text {
			p.other = append(p.other, chart.Point{X: t, Y: 0})
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
		p.tokens = append(p.tokens, chart.Point{X: t, Y: nTok})
		p.events = append(p.events, chart.Point{X: t, Y: nEv})
		// One stem per event: a NaN point lifts the pen between them.
		p.stems = append(p.stems, chart.Point{X: t, Y: 0}, chart.Point{X: t, Y: carried}, chart.Point{X: nan, Y: nan})
		p.tips = append(p.tips, chart.Point{X: t, Y: carried})
	}
	if e2e, ok := msOf(pk.q.E2E); ok {
		p.tokens = append(p.tokens, chart.Point{X: e2e, Y: nTok})
		p.events = append(p.events, chart.Point{X: e2e, Y: nEv})
	}
	return p
}

// draw adds the picked request to the panels and the legend: what arrived so far above, one
// stem per event below, the old run's in lighter colours.
func (pk timelinePick) draw(top, bottom *chart.Plot, leg *chart.Legend, withTokens bool) {
	old := pk.r.role == "old"
	tokCol, evCol := palette[0], palette[1]
	if old {
		tokCol, evCol = color.RGBA{0x7f, 0xb0, 0xd6, 0xff}, color.RGBA{0xe8, 0xa8, 0x80, 0xff}
	}
	p := pk.points(withTokens)
	lt := line(p.tokens, tokCol, 1.6, nil)
	lt.Step = true
	le := line(p.events, evCol, 1.6, []float64{4, 2})
	le.Step = true
	if old {
		lt.Style.Dashes = oldDashes
	}
	top.Add(lt, le)
	what := "tokens"
	if !withTokens {
		what = "text bytes"
	}
	leg.Add(what+" received"+pk.r.suffix(), lt)
	leg.Add("text events received"+pk.r.suffix(), le)
	if len(p.stems) > 0 {
		ls := line(p.stems, tokCol, 1, nil)
		sc := scatter(p.tips, chart.Dot, tokCol, 2)
		if old {
			sc.Marker.Shape = chart.Ring
		}
		bottom.Add(ls, sc)
		leg.Add(what+" per event"+pk.r.suffix(), ls, sc)
	}
	if len(p.other) > 0 {
		so := scatter(p.other, chart.Cross, color.Gray{Y: 0x70}, 2.5)
		bottom.Add(so)
		leg.Add("event without text"+pk.r.suffix(), so)
	}
}
