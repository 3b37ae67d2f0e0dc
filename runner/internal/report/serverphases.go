package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// serverPhasesChartName is the file stem of the chart of server-side phases per request.
const serverPhasesChartName = "server_phases"

// maxPhaseBars is the most requests the server-phase chart draws per config and folder: more
// bars than this no longer read as bars at the chart's width.
const maxPhaseBars = 50

// phaseColors are the colours of the server's queue, prefill and decode times, and of the
// client's time to first text and the rest of its stream.
var (
	phaseColors  = [3]color.RGBA{palette[4], palette[1], palette[0]}
	clientTTFTCl = color.RGBA{0x44, 0x44, 0x44, 0xff}
	clientRestCl = color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
)

// phaseNames name the stacked segments, bottom first.
var phaseNames = [3]string{"server: queue", "server: prefill", "server: decode"}

// hasServerPhases reports whether the server said how long at least one phase of q took.
func hasServerPhases(q *record.Request) bool {
	return q.ServerQueue != nil || q.ServerPrefill != nil || q.ServerDecode != nil
}

// phaseBar is one request as the chart draws it, in milliseconds: the server's phases (zero
// where the server did not say) and the client's TTFT and e2e (NaN when missing).
type phaseBar struct {
	phases    [3]float64
	ttft, e2e float64
	old       bool
}

func newPhaseBar(q *record.Request, old bool) phaseBar {
	b := phaseBar{ttft: math.NaN(), e2e: math.NaN(), old: old}
	for i, d := range []*time.Duration{q.ServerQueue, q.ServerPrefill, q.ServerDecode} {
		if v, ok := msOf(d); ok {
			b.phases[i] = v
		}
	}
	if v, ok := msOf(q.TTFT); ok {
		b.ttft = v
	}
	if v, ok := msOf(q.E2E); ok {
		b.e2e = v
	}
	return b
}

// top returns the highest value the bar reaches.
func (b phaseBar) top() float64 {
	t := b.phases[0] + b.phases[1] + b.phases[2]
	for _, v := range []float64{b.ttft, b.e2e} {
		if !math.IsNaN(v) {
			t = max(t, v)
		}
	}
	return t
}

// samplePhases returns at most maxPhaseBars of qs, evenly spaced in the order they were sent,
// the first and the last included.
func samplePhases(qs []*record.Request) []*record.Request {
	n := len(qs)
	if n <= maxPhaseBars {
		return qs
	}
	out := make([]*record.Request, maxPhaseBars)
	for j := range out {
		out[j] = qs[int(math.Round(float64(j)*float64(n-1)/float64(maxPhaseBars-1)))]
	}
	return out
}

// phasePanel is one config's panel: its bars, old folder first, with a gap between the folders.
type phasePanel struct {
	label string
	bars  []phaseBar
	gaps  map[int]bool // a blank slot before the bar at this index
}

// phaseBars returns a panel's bars: for each request, the server's phases stacked on the
// left of its slot and the client's TTFT and e2e as a thin grey bar on the right, so that the
// two can be read against each other. The slots run from 0, one per request, with a blank one
// between the folders.
func phaseBars(pn *phasePanel) chart.Boxes {
	var out chart.Boxes
	rect := func(x0, x1, y0, y1 float64, col color.Color) {
		if y1 > y0 {
			out = append(out, chart.Box{X0: x0, X1: x1, Y0: y0, Y1: y1, Fill: col})
		}
	}
	for i, x := range pn.slots() {
		b := pn.bars[i]
		alpha := 0.9
		if b.old {
			alpha = 0.35
		}
		y := 0.0
		for k, v := range b.phases {
			rect(x-0.4, x+0.1, y, y+v, withAlpha(phaseColors[k], alpha))
			y += v
		}
		if !math.IsNaN(b.ttft) {
			rect(x+0.12, x+0.4, 0, b.ttft, withAlpha(clientTTFTCl, alpha))
			if !math.IsNaN(b.e2e) {
				rect(x+0.12, x+0.4, b.ttft, b.e2e, withAlpha(clientRestCl, alpha))
			}
		}
	}
	return out
}

// slots returns the x position of each bar, leaving the panel's gaps blank.
func (pn *phasePanel) slots() []float64 {
	xs := make([]float64, len(pn.bars))
	x := 0.0
	for i := range pn.bars {
		if pn.gaps[i] {
			x++
		}
		xs[i] = x
		x++
	}
	return xs
}

// phaseRange returns the slots on x and zero to the highest bar on y.
func (pn *phasePanel) phaseRange() (xmin, xmax, ymin, ymax float64) {
	xs := pn.slots()
	for _, b := range pn.bars {
		ymax = max(ymax, b.top())
	}
	if ymax == 0 {
		ymax = 1
	}
	return -0.6, xs[len(xs)-1] + 0.6, 0, ymax
}

// phaseStats counts what the server-phase chart rests on.
type phaseStats struct {
	shown, timed, measured int // requests drawn, timed by the server, measured and successful
	partial                int // timed requests that lack a phase
	overheads              []string
}

// phasePanels returns one panel per config whose measured, successful requests the server
// timed, in the order of configRows, and what they rest on.
func phasePanels(runs []*run) ([]*phasePanel, phaseStats) {
	var panels []*phasePanel
	var st phaseStats
	for _, label := range configRows(runs) {
		pn := &phasePanel{label: label, gaps: map[int]bool{}}
		for _, r := range runs {
			cd := r.byLabel[label]
			if cd == nil {
				continue
			}
			st.measured += len(cd.ok)
			var qs []*record.Request
			var over []float64
			for _, q := range cd.ok {
				if !hasServerPhases(q) {
					continue
				}
				qs = append(qs, q)
				if q.ServerQueue == nil || q.ServerPrefill == nil || q.ServerDecode == nil {
					st.partial++
				}
				if v, ok := clientOverhead(q); ok {
					over = append(over, v)
				}
			}
			if len(qs) == 0 {
				continue
			}
			st.timed += len(qs)
			if len(pn.bars) > 0 {
				pn.gaps[len(pn.bars)] = true
			}
			for _, q := range samplePhases(qs) {
				pn.bars = append(pn.bars, newPhaseBar(q, r.role == "old"))
				st.shown++
			}
			if len(over) > 0 {
				st.overheads = append(st.overheads, fmt.Sprintf("%s%s %.2f ms", label, r.suffix(), median(over)))
			}
		}
		if len(pn.bars) > 0 {
			panels = append(panels, pn)
		}
	}
	return panels, st
}

// serverPhasesChart draws, for every config whose measured requests the server timed, one bar
// per request (at most maxPhaseBars per folder): queue, prefill and decode stacked, and the
// client's TTFT and e2e beside them.
func serverPhasesChart(runs []*run) (*figure, string) {
	panels, st := phasePanels(runs)
	if len(panels) == 0 {
		return nil, "no measured request has server-side timings (queue, prefill or decode from the server's /metrics)"
	}
	cols := 1
	if len(panels) > 1 {
		cols = 2
	}
	rows := (len(panels) + cols - 1) / cols
	c := &figure{Name: serverPhasesChartName, Title: "Server-side phases of each request against the client's latency",
		W: 7.5 * inch, H: float64(rows)*2.3*inch + 0.5*inch}
	c.Caption = fmt.Sprintf("One slot per measured request that the server timed, in the order sent: on the left the "+
		"server's own queue, prefill and decode times, stacked, from the change in its /metrics histograms across the "+
		"request; on the right, in grey, the client's TTFT (dark) and the rest of its stream up to e2e (light). Where "+
		"the dark grey rises above queue + prefill, or the light grey above the whole stack, the client saw time the "+
		"server did not count: HTTP, the network, detokenisation and the client itself. At most %d requests per "+
		"config and folder are drawn, evenly spaced from the first to the last; %d of the %d timed requests here "+
		"(%d measured).", maxPhaseBars, st.shown, st.timed, st.measured)
	if st.partial > 0 {
		c.Caption += fmt.Sprintf(" %d requests lack a phase, drawn as zero.", st.partial)
	}
	if len(st.overheads) > 0 {
		c.Caption += " Median client overhead (TTFT − server TTFT): " + strings.Join(st.overheads, "; ") + "."
	}
	if len(runs) > 1 {
		c.Caption += " In each panel the requests of the old folder come first, lighter."
	}
	c.draw = func(dc chart.Canvas) {
		leg := &chart.Legend{}
		for k, name := range phaseNames {
			leg.Add(name, chart.Swatch{Fill: phaseColors[k]})
		}
		leg.Add("client: TTFT", chart.Swatch{Fill: clientTTFTCl})
		leg.Add("client: rest to e2e", chart.Swatch{Fill: clientRestCl})
		area := placeLegend(dc, leg)
		grid := make([][]*chart.Plot, rows)
		for i := range grid {
			grid[i] = make([]*chart.Plot, cols)
		}
		for i, pn := range panels {
			xl := "requests in the order sent"
			if len(runs) > 1 {
				xl = "requests in the order sent (old, then new)"
			}
			p := newPlot(pn.label, xl, "ms")
			p.TitleSize = 9
			p.X.Ticks = chart.NoTicks
			p.Y.Min = 0
			x0, x1, _, y1 := pn.phaseRange()
			p.X.Min, p.X.Max, p.Y.Max = x0, x1, y1
			p.Add(phaseBars(pn))
			grid[i/cols][i%cols] = p
		}
		chart.DrawGrid(dc, grid, area, chart.Grid{PadX: 14, PadY: 8, PadLeft: 2, PadRight: 2})
	}
	return c, ""
}

// clientOverhead returns the request's client overhead in milliseconds: as recorded, else
// its TTFT less the server's.
func clientOverhead(q *record.Request) (float64, bool) {
	if v, ok := msOf(q.ClientOverhead); ok {
		return v, true
	}
	t, ok1 := msOf(q.TTFT)
	s, ok2 := msOf(q.ServerTTFT)
	return t - s, ok1 && ok2
}
