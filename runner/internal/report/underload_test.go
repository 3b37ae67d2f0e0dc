package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// loadFixture is a load sweep of one simulated server: a closed loop at concurrency 1, 2, 4
// and 8 with 120 measured requests each, then an open loop at 1, 2, 4 and 8 requests/s with 30
// each, under an SLO. Latency rises with load; at 8 requests/s the client falls behind by a
// few milliseconds on one request in ten.
type loadFixture struct {
	seed uint64
	// scale multiplies every latency, so that two folders of one fixture differ.
	scale float64
}

const (
	fixtureServer   = "5e7e5e7e5e7e"
	fixtureOutput   = 8 // tokens per request, one per text event
	fixtureClosedN  = 120
	fixtureOpenN    = 30
	fixtureLateRate = 8
)

var (
	fixtureLevels = []int{1, 2, 4, 8}
	fixtureSLO    = []experiment.Bound{{Metric: "ttft_ms", Max: 70}, {Metric: "tpot_token_ms", Max: 16}}
)

// configs returns the fixture's configs: the closed loop's, then the open loop's, as a
// matrix's include entries would expand them.
func (m loadFixture) configs() []experiment.Config {
	var out []experiment.Config
	add := func(load experiment.LoadSpec, path, value string, reps int) {
		i := len(out)
		l := load
		out = append(out, experiment.Config{ID: fmt.Sprintf("%012x", 0xc0f1600+i), ServerID: fixtureServer,
			Label: shortName(path) + "=" + value, Index: i, Axes: []experiment.AxisValue{{Path: path, Value: value}},
			Server:  experiment.Server{Engine: "sim", Model: "sim-model"},
			Request: experiment.Request{API: "completions", PromptTokens: 256, MaxTokens: fixtureOutput},
			Warmup:  2, Repetitions: reps, Cache: "reset_per_config", Load: &l, SLO: fixtureSLO})
	}
	for _, c := range fixtureLevels {
		add(experiment.LoadSpec{Concurrency: c, Prompts: "distinct"}, "load.concurrency", fmt.Sprint(c), fixtureClosedN)
	}
	for _, r := range fixtureLevels {
		add(experiment.LoadSpec{Rate: float64(r), Arrival: "poisson", Burstiness: 1, Seed: 3, Prompts: "distinct"},
			"load.rate", fmt.Sprint(r), fixtureOpenN)
	}
	return out
}

// builder returns the fixture's folder builder. Each config's load point starts 200 s after
// the previous one's; a closed loop's requests go in waves of its concurrency, an open loop's
// at a constant spacing of 1/rate.
func (m loadFixture) builder() *resultstest.Builder {
	exp := resultstest.Experiment("load-fixture")
	return &resultstest.Builder{
		Experiment: exp,
		Configs:    m.configs(),
		Seed:       [2]uint64{m.seed, 11},
		Requests:   func(c experiment.Config) int { return c.Warmup + c.Repetitions },
		Request:    m.request,
	}
}

func (m loadFixture) request(d resultstest.Draw) record.Request {
	rng, c, seq := d.Rand, d.Config, d.Seq
	l := c.Load
	phase, rep := record.PhaseMeasure, seq-c.Warmup
	if seq < c.Warmup {
		phase, rep = record.PhaseWarmup, seq
	}
	scale := m.scale
	if scale == 0 {
		scale = 1
	}
	// The load the server sees: its requests in flight.
	var busy float64
	var scheduled time.Duration
	r := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: rep, HTTPStatus: 200,
		PromptTokensRequested: record.Int(256), PromptTokensReported: record.Int(256), MaxTokens: fixtureOutput,
		Cache: c.Cache, Status: record.StatusOK}
	if l.Open() {
		busy = 1 + 0.9*l.Rate
		scheduled = time.Duration(float64(seq) / l.Rate * float64(time.Second))
		r.LoadMode, r.Rate = record.LoadOpen, l.Rate
	} else {
		busy = float64(l.Concurrency)
		r.LoadMode, r.Concurrency = record.LoadClosed, l.Concurrency
	}
	ttft := scale * (18 + 6*(busy-1) + 4*rng.ExpFloat64())
	per := scale * (9 + 0.8*(busy-1))
	if !l.Open() {
		// A closed loop's next wave goes when the last ends.
		wave := 18 + 6*(busy-1) + 4 + per*(fixtureOutput-1) + 1
		scheduled = time.Duration(float64(seq/l.Concurrency) * wave * float64(time.Millisecond))
	}
	lag := 0.02 + 0.1*rng.Float64()
	if l.Open() && l.Rate == fixtureLateRate && rng.Float64() < 0.1 {
		lag += 2 + 2*rng.Float64()
	}
	start := resultstest.Start.Add(time.Duration(c.Index)*200*time.Second + scheduled + usec(lag))
	r.Start = start
	r.Scheduled, r.SendLag = record.Dur(scheduled), record.Dur(usec(lag))
	r.InFlight = int(math.Min(busy, float64(seq+1)))
	if l.Open() && l.Rate == float64(fixtureLevels[len(fixtureLevels)-1]) && seq == c.Warmup+5 {
		r.Status, r.HTTPStatus, r.ErrorClass, r.Error = record.StatusFailed, 503, record.ErrHTTPStatus, "503 Service Unavailable"
		return r
	}
	at := ttft
	for k := range fixtureOutput {
		if k > 0 {
			at += per * math.Max(0.5, 1+0.05*rng.NormFloat64())
		}
		r.EventList = append(r.EventList, record.Event{Seq: k, SinceT0: usec(at), Bytes: 200, TextLen: 4, Text: true, Tokens: record.Int(1)})
	}
	r.EventList = append(r.EventList, record.Event{Seq: fixtureOutput, SinceT0: usec(at + 0.2), Bytes: 180})
	first, last := r.EventList[0].SinceT0, r.EventList[fixtureOutput-1].SinceT0
	r.TTFT, r.LastText, r.E2E = record.Dur(first), record.Dur(last), record.Dur(last+usec(0.3))
	r.TPOTEvent = record.Dur((last - first) / (fixtureOutput - 1))
	r.TPOTToken, r.TPOTTokenExact = record.Dur((last-first)/(fixtureOutput-1)), true
	r.Events, r.TextEvents = fixtureOutput+1, fixtureOutput
	r.OutputTokens, r.TokenSource, r.TokensFromUsage = record.Int(fixtureOutput), record.SourceUsageCont, record.Int(fixtureOutput)
	r.ContinuousUsage, r.FinishReason, r.OutputText = true, "length", strings.Repeat("word", fixtureOutput)
	return r
}

// write writes the fixture's folder under a temporary folder and reads it back.
func (m loadFixture) write(t *testing.T) *Folder {
	t.Helper()
	return load(t, m.builder().Write(t, t.TempDir()))[0]
}

// percentile is the p-th percentile of xs by linear interpolation between closest ranks
// (Hyndman and Fan's definition 7), written here apart from the stats package.
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	h := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// fixturePoint is what a load point should plot, computed from the builder's own records.
type fixturePoint struct {
	mode                   record.LoadMode
	level                  float64
	ttft, tpot             []float64 // of the measured successful requests
	tokensPerS, goodPerS   float64
	measured, good, failed int
	lagP99                 float64
}

// expectedPoints recomputes every load point from the records the folder was written from.
func expectedPoints(t *testing.T, b *resultstest.Builder) map[string]*fixturePoint {
	t.Helper()
	out := map[string]*fixturePoint{}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	tokens := map[string]int{}
	lags := map[string][]float64{}
	for _, q := range b.Records() {
		if q.Phase != record.PhaseMeasure {
			continue
		}
		p := out[q.ConfigID]
		if p == nil {
			p = &fixturePoint{mode: q.LoadMode, level: float64(q.Concurrency)}
			if q.LoadMode == record.LoadOpen {
				p.level = q.Rate
			}
			out[q.ConfigID] = p
		}
		p.measured++
		lags[q.ConfigID] = append(lags[q.ConfigID], float64(*q.SendLag)/1e6)
		if f, ok := first[q.ConfigID]; !ok || q.Start.Before(f) {
			first[q.ConfigID] = q.Start
		}
		if q.Status != record.StatusOK {
			p.failed++
			continue
		}
		ttft, tpot := float64(*q.TTFT)/1e6, float64(*q.TPOTToken)/1e6
		p.ttft, p.tpot = append(p.ttft, ttft), append(p.tpot, tpot)
		if ttft <= 70 && tpot <= 16 {
			p.good++
		}
		tokens[q.ConfigID] += *q.OutputTokens
		if end := q.Start.Add(*q.E2E); end.After(last[q.ConfigID]) {
			last[q.ConfigID] = end
		}
	}
	for id, p := range out {
		w := last[id].Sub(first[id]).Seconds()
		p.tokensPerS, p.goodPerS = float64(tokens[id])/w, float64(p.good)/w
		p.lagP99 = percentile(lags[id], 99)
	}
	if len(out) != 2*len(fixtureLevels) {
		t.Fatalf("the fixture has %d load points, want %d", len(out), 2*len(fixtureLevels))
	}
	return out
}

// TestLoadCurves checks the plotted data of the load charts against percentiles and rates
// computed here from the records the folder was written from.
func TestLoadCurves(t *testing.T) {
	m := loadFixture{seed: 1}
	f := m.write(t)
	want := expectedPoints(t, m.builder())
	byLevel := map[record.LoadMode]map[float64]*fixturePoint{record.LoadClosed: {}, record.LoadOpen: {}}
	for _, p := range want {
		byLevel[p.mode][p.level] = p
	}
	r := newRun("", f)
	if len(r.load) != 2 || r.load[0].mode != record.LoadClosed || r.load[1].mode != record.LoadOpen {
		t.Fatalf("series %+v, want a closed loop's then an open loop's", r.load)
	}
	const eps = 1e-9
	for _, mode := range []record.LoadMode{record.LoadClosed, record.LoadOpen} {
		curves := latencyCurves([]*run{r}, mode)
		if len(curves) != 4 {
			t.Fatalf("%s: %d curves, want TTFT and TPOT at p50 and p99", mode, len(curves))
		}
		for _, c := range curves {
			if c.series != decompose.AllConfigs {
				t.Errorf("%s: series %q, want the one series of all configs", mode, c.series)
			}
			var levels []float64
			for _, pt := range c.pts {
				levels = append(levels, pt.x)
				w := byLevel[mode][pt.x]
				if w == nil {
					t.Fatalf("%s: a point at level %g, which the fixture does not have", mode, pt.x)
				}
				xs := w.ttft
				if c.panel == 1 {
					xs = w.tpot
				}
				p := 50.0
				if c.stat == "p99" {
					p = 99
				}
				if got, exp := pt.y, percentile(xs, p); math.Abs(got-exp) > eps {
					t.Errorf("%s level %g panel %d %s: plotted %v, want %v", mode, pt.x, c.panel, c.stat, got, exp)
				}
				// p99 rests on too few requests below 102 of them.
				if wantThin := c.stat == "p99" && len(xs) < 102; pt.thin != wantThin {
					t.Errorf("%s level %g %s over %d requests: thin %v, want %v", mode, pt.x, c.stat, len(xs), pt.thin, wantThin)
				}
			}
			if !slices.Equal(levels, []float64{1, 2, 4, 8}) {
				t.Errorf("%s panel %d %s: levels %v, want 1, 2, 4, 8 in order", mode, c.panel, c.stat, levels)
			}
			// The fixture's latencies rise with load, and so must the plotted medians.
			if c.stat == "p50" {
				for i := 1; i < len(c.pts); i++ {
					if c.pts[i].y <= c.pts[i-1].y {
						t.Errorf("%s panel %d: median %g at level %g after %g at %g", mode, c.panel, c.pts[i].y, c.pts[i].x, c.pts[i-1].y, c.pts[i-1].x)
					}
				}
			}
		}
	}

	knee := kneeCurves([]*run{r})
	if len(knee) != 4 {
		t.Fatalf("throughput chart: %d curves, want p50 and p99 of each loop", len(knee))
	}
	for _, c := range knee {
		mode := record.LoadClosed
		if strings.HasPrefix(c.series, "open loop") {
			mode = record.LoadOpen
		}
		if !strings.HasSuffix(c.series, ": "+decompose.AllConfigs) {
			t.Errorf("throughput chart: series %q does not name its loop", c.series)
		}
		if len(c.pts) != len(fixtureLevels) {
			t.Fatalf("throughput chart %s: %d points, want %d", c.series, len(c.pts), len(fixtureLevels))
		}
		for i, pt := range c.pts {
			level := float64(fixtureLevels[i]) // in load order
			w := byLevel[mode][level]
			label := fmt.Sprint(fixtureLevels[i])
			if mode == record.LoadOpen {
				label += "/s"
			}
			p := 50.0
			if c.stat == "p99" {
				p = 99
			}
			if math.Abs(pt.x-w.tokensPerS) > 1e-6 || math.Abs(pt.y-percentile(w.ttft, p)) > eps || pt.label != label {
				t.Errorf("throughput chart %s %s point %d: (%v, %v) %q, want (%v, %v) %q", c.series, c.stat, i,
					pt.x, pt.y, pt.label, w.tokensPerS, percentile(w.ttft, p), label)
			}
		}
	}
}

// loadCharts are the load charts a folder with both kinds of loop draws, in page order.
var loadCharts = []string{latencyConcurrencyChart, latencyRateChart, kneeChartName}

// TestReportLoad writes the report of the fixture and checks the page: the load section with
// its charts and table, the load point that the client sent late flagged as such, and a golden
// of the section.
func TestReportLoad(t *testing.T) {
	m := loadFixture{seed: 1}
	f := m.write(t)
	out := outDir(t, "load")
	res, err := Write(out, f)
	if err != nil {
		t.Fatal(err)
	}
	// One prompt and one output length: the two sweep charts are left out, as for any folder.
	want := append(slices.Clone(loadCharts), "decomposition", "ttft_distribution", "itl_distribution",
		"request_timeline", "tpot_event_vs_token")
	page := checkReport(t, res, want)
	for _, w := range []string{`<h2 id="load">Latency under load</h2>`, `id="load-points"`,
		"ttft_ms ≤ 70 ms, tpot_token_ms ≤ 16 ms", "1 of 8 load points have a send lag p99 above"} {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", IndexFile, w)
		}
	}
	// The section comes before the fits, and its rows say which load point was late.
	if strings.Index(page, `id="load"`) > strings.Index(page, `id="fits"`) {
		t.Errorf("the load section is not before the fits")
	}
	rows := regexp.MustCompile(`(?m)^<tr><td class="l">all configs</td>.*$`).FindAllString(page, -1)
	if len(rows) != 8 {
		t.Fatalf("the load point table has %d rows, want 8", len(rows))
	}
	for i, row := range rows {
		late := strings.Contains(row, "client late")
		if wantLate := i == len(rows)-1; late != wantLate {
			t.Errorf("row %d (%s): late %v, want %v", i, row, late, wantLate)
		}
	}
	want8 := expectedPoints(t, m.builder())
	// Rows go by series, then level: the closed loop's, then the open loop's. Each holds its
	// output tokens/s, goodput and SLO attainment as computed here.
	var ordered []*fixturePoint
	for _, p := range want8 {
		ordered = append(ordered, p)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].mode != ordered[j].mode {
			return ordered[i].mode == record.LoadClosed
		}
		return ordered[i].level < ordered[j].level
	})
	for i, p := range ordered {
		cells := fmt.Sprintf("<td>%.2f</td>", p.tokensPerS)
		slo := fmt.Sprintf("<td>%.2f</td><td>%.1f%%</td>", p.goodPerS, 100*float64(p.good)/float64(p.measured))
		if !strings.Contains(rows[i], cells) || !strings.Contains(rows[i], slo) {
			t.Errorf("row %d %s lacks output tokens/s %s or goodput and attainment %s", i, rows[i], cells, slo)
		}
	}
	for _, p := range want8 {
		if p.mode == record.LoadOpen && p.level == fixtureLateRate {
			if p.lagP99 <= 1 {
				t.Fatalf("the fixture's late load point has a send lag p99 of %g ms, not above 1 ms", p.lagP99)
			}
			if !strings.Contains(rows[len(rows)-1], fmt.Sprintf("%.3f client late", p.lagP99)) {
				t.Errorf("late row %s lacks its send lag p99 %.3f", rows[len(rows)-1], p.lagP99)
			}
		}
	}

	got := loadSection(t, page)
	golden := filepath.Join("testdata", "load_section.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the golden section was generated on amd64")
	}
	exp, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, exp) {
		t.Errorf("the load section differs from %s (run go test -update to regenerate):\n%s", golden, got)
	}
}

// loadSection returns the page's load section, from its heading to the fits, with each inline
// chart's drawing cut to an empty svg element: the golden checks the words and numbers, the
// chart tests the drawings.
func loadSection(t *testing.T, page string) []byte {
	t.Helper()
	i, j := strings.Index(page, `<h2 id="load">`), strings.Index(page, `<h2 id="fits">`)
	if i < 0 || j < i {
		t.Fatalf("%s has no load section before the fits", IndexFile)
	}
	s := regexp.MustCompile(`(?s)<svg.*?</svg>`).ReplaceAllString(page[i:j], "<svg></svg>")
	return []byte(s)
}

// TestReportLoadSectionOnlyWithLoad checks that a folder without load points gets no load
// section and no load chart, and that a report written over a load report removes the load
// charts' files.
func TestReportLoadSectionOnlyWithLoad(t *testing.T) {
	out := outDir(t, "load-then-none")
	if _, err := Write(out, loadFixture{seed: 1}.write(t)); err != nil {
		t.Fatal(err)
	}
	res, err := Write(out, load(t, filepath.Join("testdata", "new"))...)
	if err != nil {
		t.Fatal(err)
	}
	page := checkReport(t, res, untimedCharts())
	for _, w := range []string{`id="load"`, "Latency under load", "load-points", "send lag"} {
		if strings.Contains(page, w) {
			t.Errorf("%s of a folder without load points holds %q", IndexFile, w)
		}
	}
	for _, c := range loadCharts {
		if _, err := os.Stat(filepath.Join(out, c+".png")); !os.IsNotExist(err) {
			t.Errorf("%s.png of the earlier load report is still there (%v)", c, err)
		}
	}
}

// TestReportLoadCompare overlays two load folders: both appear in every load chart's legend
// and in the table.
func TestReportLoadCompare(t *testing.T) {
	old, new := loadFixture{seed: 1, scale: 1.3}.write(t), loadFixture{seed: 2}.write(t)
	out := outDir(t, "load-compare")
	res, err := Write(out, old, new)
	if err != nil {
		t.Fatal(err)
	}
	page := checkReport(t, res, append(slices.Clone(loadCharts), "decomposition", "ttft_distribution", "itl_distribution",
		"request_timeline", "tpot_event_vs_token"))
	for _, c := range loadCharts {
		svg := string(checkSVG(t, filepath.Join(out, c+".svg")))
		if !strings.Contains(svg, "(old)") || !strings.Contains(svg, "(new)") {
			t.Errorf("%s.svg does not show both folders", c)
		}
	}
	if n := strings.Count(page, `<tr><td class="l">old</td><td class="l">all configs</td>`); n != 8 {
		t.Errorf("the load point table has %d rows of the old folder, want 8", n)
	}
}

// TestLoadChartSkips checks the reasons a load chart gives when the load points cannot draw
// it: one level only.
func TestLoadChartSkips(t *testing.T) {
	m := loadFixture{seed: 1}
	b := m.builder()
	b.Configs = b.Configs[:1] // concurrency 1 alone
	f := load(t, b.Write(t, t.TempDir()))[0]
	res, err := Write(outDir(t, "load-one-level"), f)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Chart+": "+s.Reason)
	}
	for _, w := range []string{latencyConcurrencyChart + ": the load points do not vary the concurrency (1 distinct value)",
		kneeChartName + ": no series has two load points with a measured window and a TTFT"} {
		if !slices.Contains(skipped, w) {
			t.Errorf("skipped %q, want %q among them", skipped, w)
		}
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "Load charts not drawn") || !strings.Contains(string(page), `id="load-points"`) {
		t.Errorf("%s does not say why the load charts are missing, or lacks the table", IndexFile)
	}
}

// usec rounds milliseconds to whole microseconds, as requests.csv holds them.
func usec(ms float64) time.Duration { return time.Duration(math.Round(ms*1e3)) * time.Microsecond }
