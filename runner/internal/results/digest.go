package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// Digest is what the summaries and comparisons of a folder need of its requests, gathered one
// request at a time: for each config, its counts, the values of each metric over its
// successful measured requests, and what its warnings and its load point rest on. It keeps a
// few numbers per request instead of the requests, so that a folder of hundreds of thousands of
// requests is summarised in tens of megabytes; Summarize and SummarizeLoad are a Digest of a
// slice of requests.
type Digest struct {
	groups []*ConfigDigest
	at     map[string]int
	rows   int // rows added so far
}

// ConfigDigest is one config of a Digest.
type ConfigDigest struct {
	// Config is the config; one that only the rows name has its ID, the ServerID of its first
	// row, its ID as its Label and Index -1, as in GroupByConfig.
	Config experiment.Config
	Listed bool // the config is in the list that NewDigest was given
	// Loaded is set when the config has a load section or one of its rows was sent under one
	// (a load mode or a send lag); LoadRows when one of its rows has a load mode.
	Loaded, LoadRows bool
	Measured, Failed int // measured requests, and those of them that failed
	// HitsMeasured counts the measured requests that hit the prefix cache after it was reset;
	// hitsOK, the successful ones among them. FirstHit is the position among all the rows added
	// of the first of them, for listing configs in the order their hits appeared; -1 for none.
	HitsMeasured, hitsOK, FirstHit int

	values  [][]float64 // per metric (Metrics order), over successful measured requests
	missing []int       // per metric, successful measured requests without a value

	tpotEstimated, tpotN int
	sources              map[record.TokenSource]int
	disagree             int
	throttled, sampled   int
	clocks               []float64

	load loadDigest
}

// loadDigest is what a config's load point rests on (see loadPoint).
type loadDigest struct {
	mode        record.LoadMode // from the rows, for a config the list lacks
	concurrency int
	rate        float64
	first, last time.Time
	tokens      int
	good        int
	completed   int
	lags        []float64
	inFlightMax int
}

// NewDigest returns an empty digest of requests of configs: one group per config, in expansion
// order (a repeated id once); Add appends a group for a config that only the rows name.
func NewDigest(configs []experiment.Config) *Digest {
	d := &Digest{at: map[string]int{}}
	for _, c := range inExpansionOrder(configs) {
		if _, dup := d.at[c.ID]; dup {
			continue
		}
		d.add(c, true)
	}
	return d
}

// add appends a group for the config c.
func (d *Digest) add(c experiment.Config, listed bool) *ConfigDigest {
	g := &ConfigDigest{Config: c, Listed: listed, Loaded: listed && c.Load != nil,
		values: make([][]float64, len(metrics)), missing: make([]int, len(metrics)), sources: map[record.TokenSource]int{}}
	g.load.rate = math.NaN()
	g.FirstHit = -1
	d.at[c.ID] = len(d.groups)
	d.groups = append(d.groups, g)
	return g
}

// Configs returns the digest's configs in order: those of the list in expansion order, then
// those only the rows name, in order of first appearance.
func (d *Digest) Configs() []*ConfigDigest { return d.groups }

// Config returns the digest of the config with the id, or nil.
func (d *Digest) Config(id string) *ConfigDigest {
	if i, ok := d.at[id]; ok {
		return d.groups[i]
	}
	return nil
}

// Add takes in one request row; rows come in file order.
func (d *Digest) Add(r *record.Request) {
	g := d.Config(r.ConfigID)
	if g == nil {
		g = d.add(experiment.Config{Index: -1, ID: r.ConfigID, ServerID: r.ServerID, Label: r.ConfigID}, false)
	}
	g.Loaded = g.Loaded || r.LoadMode != record.LoadNone || r.SendLag != nil
	g.LoadRows = g.LoadRows || r.LoadMode != record.LoadNone
	d.rows++
	if r.Phase != record.PhaseMeasure {
		return
	}
	g.Measured++
	if r.CacheHitAfterReset {
		if g.HitsMeasured == 0 {
			g.FirstHit = d.rows - 1
		}
		g.HitsMeasured++
	}
	g.addLoad(r)
	if r.Status != record.StatusOK {
		g.Failed++
		return
	}
	if r.CacheHitAfterReset {
		g.hitsOK++
	}
	for i, m := range metrics {
		if v, ok := m.value(r); ok {
			g.values[i] = append(g.values[i], v)
		} else {
			g.missing[i]++
		}
	}
	g.addWarnings(r)
}

// addWarnings counts what the warnings of a successful measured request's config rest on.
func (g *ConfigDigest) addWarnings(r *record.Request) {
	if r.TPOTToken != nil {
		g.tpotN++
		if !r.TPOTTokenExact {
			g.tpotEstimated++
		}
	}
	if r.OutputTokens != nil {
		g.sources[r.TokenSource]++
	}
	var seen []int
	for _, p := range []*int{r.TokensFromIDs, r.TokensFromUsage, r.TokensFromTokenize} {
		if p != nil && !slices.Contains(seen, *p) {
			seen = append(seen, *p)
		}
	}
	if len(seen) > 1 {
		g.disagree++
	}
	g.addGPU(r)
}

// addGPU counts the GPU's state over a successful measured request.
func (g *ConfigDigest) addGPU(r *record.Request) {
	if r.GPUThrottled != nil {
		g.sampled++
		if *r.GPUThrottled {
			g.throttled++
		}
	}
	if r.GPUSMClockMeanMHz != nil {
		g.clocks = append(g.clocks, *r.GPUSMClockMeanMHz)
	}
}

// addLoad takes a measured request into the config's load point.
func (g *ConfigDigest) addLoad(r *record.Request) {
	l := &g.load
	if !g.Listed && r.LoadMode != record.LoadNone {
		// A config the manifest lacks: its rows say how it was loaded.
		l.mode, l.concurrency = r.LoadMode, r.Concurrency
		if r.LoadMode == record.LoadOpen {
			l.rate = r.Rate
		}
	}
	if !r.Start.IsZero() && (l.first.IsZero() || r.Start.Before(l.first)) {
		l.first = r.Start
	}
	if r.SendLag != nil {
		l.lags = append(l.lags, float64(*r.SendLag)/1e6)
	}
	l.inFlightMax = max(l.inFlightMax, r.InFlight)
	if r.Status != record.StatusOK {
		return
	}
	l.completed++
	if r.E2E != nil {
		if end := r.Start.Add(*r.E2E); l.last.IsZero() || end.After(l.last) {
			l.last = end
		}
	}
	if r.OutputTokens != nil {
		l.tokens += *r.OutputTokens
	}
	if g.Listed && meetsSLO(r, g.Config.SLO) {
		l.good++
	}
}

// Values returns the values of metric m over the config's successful measured requests, in
// file order; the slice is the digest's own.
func (g *ConfigDigest) Values(m Metric) []float64 {
	for i := range metrics {
		if metrics[i].Name == m.Name {
			return g.values[i]
		}
	}
	return nil
}

// Summary returns the rows of Summarize: one per config and metric.
func (d *Digest) Summary() []SummaryRow {
	var out []SummaryRow
	for _, g := range d.groups {
		out = append(out, g.summary()...)
	}
	return out
}

// summary returns the config's rows of Summarize.
func (g *ConfigDigest) summary() []SummaryRow {
	c := g.Config
	base := SummaryRow{ConfigIndex: c.Index, ConfigID: c.ID, ServerID: c.ServerID, Label: c.Label, NFailed: g.Failed}
	ok := g.Measured - g.Failed
	var common []string
	if g.Failed > 0 {
		common = append(common, fmt.Sprintf("%d of %d measured requests failed", g.Failed, g.Measured))
	}
	if g.hitsOK > 0 {
		common = append(common, fmt.Sprintf("%d of %d measured requests hit the prefix cache after it was reset: the reset did not take", g.hitsOK, ok))
	}
	common = append(common, g.gpuWarnings()...)
	var out []SummaryRow
	for i, m := range metrics {
		if m.LoadOnly() && !g.Loaded || m.PresentOnly() && len(g.values[i]) == 0 {
			continue
		}
		row := base
		row.Metric = m.Name
		row.NMissing = g.missing[i]
		row.Summary = stats.Summarize(g.values[i])
		row.Warnings = append(append([]string(nil), common...), row.Warnings...)
		if row.NMissing > 0 {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%d successful requests have no %s", row.NMissing, m.Name))
		}
		row.Warnings = append(row.Warnings, g.metricWarnings(m.Name)...)
		out = append(out, row)
	}
	return out
}

// metricWarnings says what a metric's values rest on, where that is worth knowing.
func (g *ConfigDigest) metricWarnings(metric string) []string {
	var w []string
	switch metric {
	case "tpot_token_ms":
		if g.tpotEstimated > 0 {
			w = append(w, fmt.Sprintf("%d of %d values estimated from (output tokens − 1) without per-event token counts", g.tpotEstimated, g.tpotN))
		}
	case "output_tokens":
		if len(g.sources) > 1 {
			var parts []string
			for s, n := range g.sources {
				name := string(s)
				if name == "" {
					name = "unknown"
				}
				parts = append(parts, fmt.Sprintf("%s %d", name, n))
			}
			sort.Strings(parts)
			w = append(w, "counts come from several sources: "+strings.Join(parts, ", "))
		} else if g.sources[record.SourceTiktoken] > 0 {
			w = append(w, "counts are tiktoken approximations, not the model's tokenizer")
		}
		if g.disagree > 0 {
			w = append(w, fmt.Sprintf("%d requests have token counts that disagree between ids, usage and /tokenize", g.disagree))
		}
	}
	return w
}

// gpuWarnings says when the GPU was not in one state over the config's measured requests: when
// requests overlapped power or thermal throttling, or when their mean SM clocks spread by more
// than ClockSpread. Requests without telemetry say nothing.
func (g *ConfigDigest) gpuWarnings() []string {
	var w []string
	if g.throttled > 0 {
		w = append(w, fmt.Sprintf("%d of %d measured requests overlapped GPU power or thermal throttling (telemetry.csv names the reasons): their latencies are not those of the GPU at full clocks", g.throttled, g.sampled))
	}
	if clocks := g.clocks; len(clocks) > 1 {
		lo, hi := slices.Min(clocks), slices.Max(clocks)
		if med := stats.Summarize(clocks).Median; med > 0 && (hi-lo)/med > ClockSpread {
			why := "boost and power management changed the clock between requests"
			if g.throttled > 0 {
				why = "throttling lowered it"
			}
			w = append(w, fmt.Sprintf("the GPU's SM clock varied by %.1f%% over the measured requests (%.0f to %.0f MHz, mean per request), more than %.0f%%: %s, so the latencies mix clock states",
				100*(hi-lo)/med, lo, hi, 100*ClockSpread, why))
		}
	}
	return w
}

// Load returns the rows of SummarizeLoad: one load point per config.
func (d *Digest) Load() []LoadRow {
	out := make([]LoadRow, 0, len(d.groups))
	for _, g := range d.groups {
		out = append(out, g.loadRow())
	}
	return out
}

// loadRow is the config's load point (see SummarizeLoad).
func (g *ConfigDigest) loadRow() LoadRow {
	c, l := g.Config, &g.load
	nan := math.NaN()
	row := LoadRow{ConfigIndex: c.Index, ConfigID: c.ID, ServerID: c.ServerID, Label: c.Label,
		Measured: g.Measured, Completed: l.completed, Failed: g.Failed, InFlightMax: l.inFlightMax}
	row.TargetRate, row.AchievedRate, row.OutputTokensPerS, row.Goodput, row.SLOAttained = nan, nan, nan, nan, nan
	var slo []experiment.Bound
	if g.Listed {
		slo = c.SLO
		if ld := c.Load; ld != nil {
			row.LoadMode, row.Concurrency = record.LoadClosed, ld.Concurrency
			if ld.Open() {
				row.LoadMode, row.Concurrency, row.TargetRate = record.LoadOpen, ld.MaxConcurrency, ld.Rate
			}
		}
	} else if l.mode != record.LoadNone {
		row.LoadMode, row.Concurrency, row.TargetRate = l.mode, l.concurrency, l.rate
	}
	if row.Completed > 0 && !l.first.IsZero() && l.last.After(l.first) {
		row.Window = l.last.Sub(l.first)
		s := row.Window.Seconds()
		row.AchievedRate = float64(row.Measured) / s
		row.OutputTokensPerS = float64(l.tokens) / s
		if len(slo) > 0 {
			row.Goodput = float64(l.good) / s
		}
	}
	if len(slo) > 0 {
		row.Good = record.Int(l.good)
		if row.Measured > 0 {
			row.SLOAttained = float64(l.good) / float64(row.Measured)
		}
	}
	if len(l.lags) > 0 {
		s := stats.Summarize(l.lags)
		row.SendLagP50, row.SendLagP99 = msDuration(s.Median), msDuration(s.P99)
	}
	return row
}
