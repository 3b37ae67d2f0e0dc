package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// lateSendLag is the send lag p99 above which a load point's client counts as late: it sent
// requests later than the load asked, so the server saw less load than the level says.
const lateSendLag = time.Millisecond

// levelAxes are the axis paths that set a load point's level; every other axis, the load's
// other fields included, makes a separate series.
var levelAxes = []string{"load.concurrency", "load.rate"}

// loadPoint is one config run under load: its level, its load.csv row and the spread of its
// latencies over its measured, successful requests.
type loadPoint struct {
	cd    *configData
	row   results.LoadRow
	level float64 // concurrency for a closed loop, target requests/s for an open one
	// ttft and tpot summarise ttft_ms and tpot_token_ms with the stats package, whose
	// warnings say when a percentile rests on too few requests.
	ttft, tpot stats.Summary
}

// p99Thin reports whether a summary's p99 lies between its two largest values: a p99 from too
// few requests to be a tail.
func p99Thin(s stats.Summary) bool {
	for _, w := range s.Warnings {
		if strings.Contains(w, "p99") || strings.HasPrefix(w, "one sample") {
			return true
		}
	}
	return false
}

// levelText writes a level as the charts label its points: "4" for a concurrency, "2.5/s" for
// a rate.
func (p *loadPoint) levelText() string {
	if p.row.LoadMode == record.LoadOpen {
		return trimNumber(p.level) + "/s"
	}
	return trimNumber(p.level)
}

// loadSeries is the load points of one run that differ only by their level: the same server,
// the same loop and the same values of every other axis.
type loadSeries struct {
	name string // the other axes, as otherAxesName writes them
	mode record.LoadMode
	pts  []*loadPoint // by level, lowest first
}

// loadSeriesOf groups the run's load points into series, in the order their first config was
// expanded. Configs without a load section are left out: a folder without load points has no
// series.
func loadSeriesOf(r *run) []*loadSeries {
	byID := map[string]*configData{}
	for _, cd := range r.configs {
		byID[cd.cfg.ID] = cd
	}
	var out []*loadSeries
	byKey := map[string]*loadSeries{}
	for _, row := range results.SummarizeLoad(r.f.Manifest.Configs, r.f.Requests) {
		cd := byID[row.ConfigID]
		if cd == nil || row.LoadMode == record.LoadNone {
			continue
		}
		p := &loadPoint{cd: cd, row: row, level: float64(row.Concurrency)}
		if row.LoadMode == record.LoadOpen {
			p.level = row.TargetRate
		}
		p.ttft = stats.Summarize(values(cd.ok, ttftOf))
		p.tpot = stats.Summarize(values(cd.ok, tpotTokenOf))
		name := otherAxesName(cd.cfg, levelAxes)
		// The server id keeps apart two servers whose difference no axis names; the name is
		// what charts and tables show.
		key := string(row.LoadMode) + "\x00" + cd.cfg.ServerID + "\x00" + name
		s := byKey[key]
		if s == nil {
			s = &loadSeries{name: name, mode: row.LoadMode}
			byKey[key] = s
			out = append(out, s)
		}
		s.pts = append(s.pts, p)
	}
	for _, s := range out {
		sort.SliceStable(s.pts, func(i, j int) bool { return s.pts[i].level < s.pts[j].level })
	}
	return out
}

func tpotTokenOf(q *record.Request) (float64, bool) { return msOf(q.TPOTToken) }

// hasLoad reports whether any of the runs has a load point.
func hasLoad(runs []*run) bool {
	for _, r := range runs {
		if len(r.load) > 0 {
			return true
		}
	}
	return false
}

// modeWords names a loop and the level that measures it.
func modeWords(m record.LoadMode) (loop, level string) {
	if m == record.LoadOpen {
		return "open loop", "target rate"
	}
	return "closed loop", "concurrency"
}

// sloText writes the experiment's service-level objective in words ("ttft_ms ≤ 500 ms,
// tpot_token_ms ≤ 50 ms"), from the first config that has one; "" without one.
func sloText(runs []*run) string {
	for _, r := range runs {
		for _, cd := range r.configs {
			if len(cd.cfg.SLO) > 0 {
				return boundsText(cd.cfg.SLO)
			}
		}
	}
	return ""
}

func boundsText(slo []experiment.Bound) string {
	var parts []string
	for _, b := range slo {
		parts = append(parts, fmt.Sprintf("%s ≤ %s ms", b.Metric, trimNumber(b.Max)))
	}
	return strings.Join(parts, ", ")
}

// rate writes requests or tokens per second, or "–" when there is no window to divide by.
func rate(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// loadView is the page's section on load: its charts, and a table of every load point.
type loadView struct {
	Compare   bool
	Charts    []chartView
	Skipped   []skipView
	SLO       string // the objective in words; "" without one
	Points    []loadPointView
	Late      int    // load points whose send lag p99 is above lateSendLag
	LateLimit string // lateSendLag in words
	Thin      bool   // some p99 in the table rests on too few requests
}

// loadPointView is one row of the load point table.
type loadPointView struct {
	Role, Series, Loop, Level, N, Failed string
	Target, Achieved, Tokens             string
	TTFTP50, TTFTP99, TPOTP50, TPOTP99   string
	Goodput, Attained, LagP99, InFlight  string
	Late                                 bool
}

// newLoadView returns the load section of the runs, or nil when none has a load point.
func newLoadView(runs []*run) *loadView {
	if !hasLoad(runs) {
		return nil
	}
	v := &loadView{Compare: len(runs) > 1, SLO: sloText(runs), LateLimit: trimNumber(float64(lateSendLag)/1e6) + " ms"}
	p99 := func(s stats.Summary) string {
		out := num(s.P99, "")
		if !math.IsNaN(s.P99) && p99Thin(s) {
			v.Thin = true
			out += " ×"
		}
		return out
	}
	for _, r := range runs {
		for _, s := range r.load {
			loop, _ := modeWords(s.mode)
			for _, p := range s.pts {
				row := p.row
				pv := loadPointView{Role: r.role, Series: s.name, Loop: loop, Level: p.levelText(),
					N: fmt.Sprint(row.Measured), Failed: fmt.Sprint(row.Failed), Target: rate(row.TargetRate),
					Achieved: rate(row.AchievedRate), Tokens: rate(row.OutputTokensPerS),
					TTFTP50: num(p.ttft.Median, ""), TTFTP99: p99(p.ttft), TPOTP50: num(p.tpot.Median, ""), TPOTP99: p99(p.tpot),
					Goodput: rate(row.Goodput), Attained: "–", LagP99: "–", InFlight: "–"}
				if !math.IsNaN(row.SLOAttained) {
					pv.Attained = fmt.Sprintf("%.1f%%", row.SLOAttained*100)
				}
				if row.SendLagP99 != nil {
					pv.LagP99 = fmt.Sprintf("%.3f", float64(*row.SendLagP99)/1e6)
					pv.Late = *row.SendLagP99 > lateSendLag
				}
				if pv.Late {
					v.Late++
				}
				if row.InFlightMax > 0 {
					pv.InFlight = fmt.Sprint(row.InFlightMax)
				}
				v.Points = append(v.Points, pv)
			}
		}
	}
	return v
}
