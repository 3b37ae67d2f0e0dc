package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/onelayerdown/runner/runner/internal/chart"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// throttleColor marks what happened under power or thermal throttling.
var throttleColor = color.RGBA{0xD5, 0x5E, 0x00, 0xff}

// gpuChart draws the GPU samples of the newest run that has them: above, each GPU's SM clock
// over time with every measured request as a bar over its span at its mean clock (vermillion
// when throttling overlapped it); below, the temperature. A run without telemetry draws
// nothing and says nothing: there was no GPU to sample.
func gpuChart(runs []*run) (*figure, string) {
	var r *run
	for _, x := range runs {
		if len(x.f.Telemetry) > 0 {
			r = x
		}
	}
	if r == nil {
		return nil, ""
	}
	samples := r.f.Telemetry
	t0 := samples[0].Time
	for _, s := range samples {
		if s.Time.Before(t0) {
			t0 = s.Time
		}
	}
	secs := func(q *record.Request, d float64) float64 { return q.Start.Sub(t0).Seconds() + d }
	var reqs []*record.Request
	var throttled int
	for _, cd := range r.configs {
		for _, q := range cd.ok {
			if q.GPUSMClockMeanMHz != nil && q.E2E != nil {
				reqs = append(reqs, q)
				if q.GPUThrottled != nil && *q.GPUThrottled {
					throttled++
				}
			}
		}
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Start.Before(reqs[j].Start) })
	c := &figure{Name: "gpu_telemetry", Title: "GPU clock and temperature", W: 8 * inch, H: 6 * inch}
	c.Caption = fmt.Sprintf("The GPU samples of %s (telemetry.csv, %d samples) against time since the first. Above: each GPU's SM clock; "+
		"each measured request is a bar over its span at its mean SM clock, vermillion where power or thermal throttling "+
		"overlapped it (%d of %d requests), and the samples taken under such throttling are vermillion dots. Below: the "+
		"GPU temperature. A clock that drops under load while the temperature or power climbs is the GPU at a limit, and "+
		"the latencies measured then are not those of its full clocks.", r.f.Name(), len(samples), throttled, len(reqs))
	c.Caption += drawnCount{drawn: min(len(reqs), maxScatter), all: len(reqs)}.caption("requests")
	c.draw = func(dc chart.Canvas) {
		top := newPlot("SM clock while the server ran", "", "SM clock (MHz)")
		bottom := newPlot("", "time since the first sample (s)", "temperature (°C)")
		leg := &chart.Legend{}
		byGPU := map[int][]record.GPUSample{}
		var gpus []int
		for _, s := range samples {
			if _, ok := byGPU[s.GPU]; !ok {
				gpus = append(gpus, s.GPU)
			}
			byGPU[s.GPU] = append(byGPU[s.GPU], s)
		}
		sort.Ints(gpus)
		var hot []chart.Point
		for i, g := range gpus {
			var clock, temp []chart.Point
			for _, s := range byGPU[g] {
				x := s.Time.Sub(t0).Seconds()
				if s.SMClockMHz != nil {
					clock = append(clock, chart.Point{X: x, Y: float64(*s.SMClockMHz)})
					if s.PowerOrThermal() {
						hot = append(hot, chart.Point{X: x, Y: float64(*s.SMClockMHz)})
					}
				}
				if s.TempC != nil {
					temp = append(temp, chart.Point{X: x, Y: float64(*s.TempC)})
				}
			}
			col := colorOf(i)
			if col == throttleColor {
				col = colorOf(i + 1)
			}
			name := fmt.Sprintf("GPU %d", g)
			if len(clock) > 0 {
				l := line(clock, col, 1.2, nil)
				l.Step = true
				top.Add(l)
				leg.Add(name+" SM clock", l)
			}
			if len(temp) > 0 {
				l := line(temp, col, 1.2, []float64{4, 2})
				l.Step = true
				bottom.Add(l)
				leg.Add(name+" temperature", l)
			}
		}
		// One bar per request: a NaN point lifts the pen between them, so that the time between
		// two requests is not drawn.
		nan := math.NaN()
		var full, slow []chart.Point
		for _, q := range sample(reqs, maxScatter) {
			y := *q.GPUSMClockMeanMHz
			seg := []chart.Point{{X: secs(q, 0), Y: y}, {X: secs(q, q.E2E.Seconds()), Y: y}, {X: nan, Y: nan}}
			if q.GPUThrottled != nil && *q.GPUThrottled {
				slow = append(slow, seg...)
			} else {
				full = append(full, seg...)
			}
		}
		addBars := func(pts []chart.Point, col color.Color, label string) {
			if len(pts) == 0 {
				return
			}
			l := line(pts, col, 4, nil)
			top.Add(l)
			leg.Add(label, l)
		}
		addBars(full, withAlpha(palette[2], 0.6), "measured request, mean SM clock")
		addBars(slow, withAlpha(throttleColor, 0.8), "measured request under throttling")
		if len(hot) > 0 {
			sc := scatter(hot, chart.Dot, throttleColor, 2)
			top.Add(sc)
			leg.Add("sample with power or thermal throttling", sc)
		}
		x0, x1 := min(top.X.Min, bottom.X.Min), max(top.X.Max, bottom.X.Max)
		top.X.Min, top.X.Max, bottom.X.Min, bottom.X.Max = x0, x1, x0, x1
		area := placeLegend(dc, leg)
		chart.DrawGrid(dc, [][]*chart.Plot{{top}, {bottom}}, area, chart.Grid{PadY: 6, PadTop: 2, PadBottom: 2})
	}
	return c, ""
}
