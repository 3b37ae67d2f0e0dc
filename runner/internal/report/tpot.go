package report

import (
	"fmt"
	"math"

	mstats "github.com/montanaflynn/stats"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// differBy is the relative difference above which event-based and token-based TPOT are said
// to differ.
const differBy = 0.02

// tpotPair is the median event-based and token-based TPOT of one config of one run.
type tpotPair struct {
	label        string
	role         string
	event, token float64 // NaN when missing
	exact        bool    // every token-based value came from per-event counts
	n            int
}

// ratio returns event / token TPOT.
func (t tpotPair) ratio() float64 { return t.event / t.token }

// differs reports whether the two TPOTs differ by more than differBy.
func (t tpotPair) differs() bool { return math.Abs(t.ratio()-1) > differBy }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m, _ := mstats.Median(mstats.Float64Data(xs))
	return m
}

// tpotPairs returns the TPOT pair of every config of a run that has both medians.
func tpotPairs(r *run) []tpotPair {
	var out []tpotPair
	for _, cd := range r.configs {
		ev := values(cd.ok, func(q *record.Request) (float64, bool) { return msOf(q.TPOTEvent) })
		tok := values(cd.ok, func(q *record.Request) (float64, bool) { return msOf(q.TPOTToken) })
		if len(ev) == 0 || len(tok) == 0 {
			continue
		}
		exact := true
		for _, q := range cd.ok {
			if q.TPOTToken != nil && !q.TPOTTokenExact {
				exact = false
			}
		}
		out = append(out, tpotPair{label: cd.label(), role: r.role, event: median(ev), token: median(tok), exact: exact, n: len(tok)})
	}
	return out
}

// tpotChart draws the median TPOT per event and per token of every config side by side.
func tpotCompareChart(runs []*run) (*figure, string) {
	pairs := map[*run]map[string]tpotPair{}
	var differ, total int
	for _, r := range runs {
		pairs[r] = map[string]tpotPair{}
		for _, p := range tpotPairs(r) {
			pairs[r][p.label] = p
			total++
			if p.differs() {
				differ++
			}
		}
	}
	if total == 0 {
		return nil, "no config has both a TPOT per event and a TPOT per token"
	}
	var rows []string
	for _, l := range configRows(runs) {
		for _, r := range runs {
			if _, ok := pairs[r][l]; ok {
				rows = append(rows, l)
				break
			}
		}
	}
	c := &figure{Name: "tpot_event_vs_token", Title: "TPOT per streamed event against TPOT per token",
		W: 7.5 * inch, H: rowsHeight(len(rows), len(runs))}
	c.Caption = fmt.Sprintf("Median TPOT of each config computed two ways: per text event, (last − first text event) / "+
		"(text events − 1), and per token, (last − first text event) / (tokens after the first event). They agree when "+
		"every event carries one token; when events carry several, the per-event figure is larger by the mean tokens per "+
		"event. They differ by more than %.0f%% in %d of %d configs here.", differBy*100, differ, total)
	if len(runs) > 1 {
		c.Caption += " Lighter bars are the old folder."
	}
	c.draw = func(dc chart.Canvas) {
		p := newPlot(c.Title, "median TPOT (ms)", "")
		leg := &chart.Legend{}
		nbars := 2 * len(runs)
		width := 0.8 / float64(nbars) // in rows
		k := 0
		for _, r := range runs {
			for j, which := range []string{"per event", "per token"} {
				col := palette[j]
				alpha := 0.85
				if r.role == "old" {
					alpha = 0.35
				}
				// Bars of one row, from the top: old per event, old per token, new ...
				off := width * (float64(nbars-1)/2 - float64(k))
				var bars chart.Boxes
				for i, l := range rows {
					pr, ok := pairs[r][l]
					v := pr.event
					if j == 1 {
						v = pr.token
					}
					if !ok || math.IsNaN(v) {
						v = 0
					}
					y := float64(len(rows)-1-i) + off
					bars = append(bars, chart.Box{X0: 0, X1: v, Y0: y - width/2, Y1: y + width/2,
						Fill: withAlpha(col, alpha), Line: chart.LineStyle{Color: col, Width: 0.5}})
				}
				p.Add(bars)
				leg.Add(which+r.suffix(), bars)
				k++
			}
		}
		p.Y.Ticks = nominalTicks(rows)
		p.Y.Min, p.Y.Max = -0.5, float64(len(rows))-0.5
		p.X.Min = 0
		legendBeside(dc, p, leg)
	}
	return c, ""
}
