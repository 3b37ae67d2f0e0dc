// Package compare compares two result folders, an old one (the baseline) and a new one, config
// by config and metric by metric, and evaluates a CI gate on the result.
//
// Configs are joined by their stable id (or, on request, by their label); a config on one side
// only is reported as such. For each metric of each config present on both sides it gives the
// old and new medians with their distribution-free confidence intervals, the change of the
// median in percent, and the p-value of a two-sided Mann-Whitney U test of the two samples; a
// change whose p-value is not below alpha is "~", not significant. It warns where the samples
// are too small for the test to ever reach alpha, and where the two folders' environments
// (engine, engine version, model, dtype, GPU, server command line, format version) differ, since
// that makes the comparison one of different experiments.
//
// The values compared are those that summaries describe: the successful requests of the
// measure phase, each metric in milliseconds or units.
package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// DefaultAlpha is the significance level used when Options.Alpha is 0.
const DefaultAlpha = 0.05

// JoinBy names what configs are matched by.
type JoinBy string

// The ways of joining configs.
const (
	// ByID matches configs by their stable id, which changes with anything in the config,
	// the server's model and arguments included.
	ByID JoinBy = "id"
	// ByLabel matches configs by their label (their axis values), for comparing runs of an
	// experiment whose fixed parts were changed on purpose.
	ByLabel JoinBy = "label"
)

// Options configure a comparison.
type Options struct {
	Alpha      float64     // significance level in (0, 1); 0 means DefaultAlpha
	Thresholds []Threshold // the gate's rules; none means no metric fails the gate
	// Strict also fails the gate when the comparison cannot be trusted: the environments
	// differ, a config is on one side only, a gated metric cannot be tested, or a token count
	// changed significantly.
	Strict bool
	// AllowMissing keeps the gate from failing on what the new run lacks: a gated metric with
	// values in the old run and none in the new one (every request failed, say), or a config
	// of the old run that the new one does not have. Without it, either fails the gate, so that
	// a dead run can never pass.
	AllowMissing bool
	JoinBy       JoinBy // ByID when empty
}

// Side is one result folder as a comparison reads it.
type Side = results.Contents

// Load reads the result folder dir for a comparison. It fails on a folder it cannot read,
// including one of a format version it does not know.
func Read(dir string) (*Side, error) { return results.ReadAll(dir) }

// Report is the outcome of a comparison: everything the encoders show.
type Report struct {
	Alpha    float64 // significance level
	CILevel  float64 // confidence level of the median intervals
	JoinBy   JoinBy
	Old, New Folder
	// Env lists the environment fields of both folders, in a fixed order, whether or not they
	// differ.
	Env     []EnvField
	OnlyOld []ConfigRef // configs of the old folder that the new one lacks
	OnlyNew []ConfigRef // configs of the new folder that the old one lacks
	// Rows holds one row per config and metric: configs in the old folder's order, then those
	// only in the new folder; metrics in the order of results.Metrics.
	Rows     []Row
	Gate     Gate
	Warnings []string // about the comparison as a whole, one sentence each
}

// Folder describes one side of a comparison.
type Folder struct {
	Dir           string
	Experiment    string
	Status        results.Status
	Start         time.Time
	RunnerVersion string
	Configs       int // configs in the folder
	Measured      int // measured requests
	Failed        int // measured requests that failed
}

// ConfigRef names a config.
type ConfigRef struct {
	ID    string
	Label string
}

// Presence says on which sides a row's config exists.
type Presence string

// The presences of a config.
const (
	Both    Presence = "both"
	OldOnly Presence = "old_only"
	NewOnly Presence = "new_only"
)

// Verdict is the outcome of one metric's comparison.
type Verdict string

// The verdicts. Worse and Better are for durations, where larger is worse; a count that moved
// significantly is Changed, as is a duration whose median did not move although its
// distribution did.
const (
	Same     Verdict = "~"        // no significant change at alpha
	Worse    Verdict = "worse"    // significantly larger median duration
	Better   Verdict = "better"   // significantly smaller median duration
	Changed  Verdict = "changed"  // significant change of a count, or of a duration with an unmoved median
	Untested Verdict = "untested" // not compared: a side has no values or no config
)

// GateVerdict is what the gate made of one row.
type GateVerdict string

// The gate's verdicts of a row.
const (
	GateNone       GateVerdict = ""           // the metric has no threshold
	GateOK         GateVerdict = "ok"         // tested and within its threshold
	GateFail       GateVerdict = "fail"       // significantly beyond its threshold
	GateUntestable GateVerdict = "untestable" // a side has no values, or too few to ever reach alpha
	GateMissing    GateVerdict = "missing"    // values in the old run, none in the new one (or no such config)
)

// Sample describes one side of one metric of one config.
type Sample struct {
	N      int     // values compared
	Failed int     // measured requests of the config that failed
	Median float64 // NaN without values
	CILow  float64 // bounds of the median's confidence interval; NaN when there are too few values
	CIHigh float64
}

// Row compares one metric of one config.
type Row struct {
	ConfigID string
	Label    string
	Metric   string // a results metric name: ttft_ms, output_tokens, ...
	Unit     string // ms or count
	Presence Presence
	Old, New Sample
	// ChangePct is (new median − old median) / old median × 100; NaN when a side has no
	// values or the old median is 0.
	ChangePct float64
	P         float64      // two-sided Mann-Whitney p-value; NaN when not tested
	Test      stats.Method // how P was computed; empty when not tested
	// MinP is the smallest p-value that samples of these sizes can give; where it is not below
	// alpha the test cannot detect any change. NaN when not tested.
	MinP        float64
	Significant bool // P < alpha
	Verdict     Verdict
	Threshold   string // the gate's limit for the metric, e.g. +10%; empty when none
	Gate        GateVerdict
	Warnings    []string
}

// Gate is the outcome of the CI gate.
type Gate struct {
	Thresholds []Threshold
	Strict     bool
	Result     GateResult
	// Reasons says why the gate failed, one sentence per row or fact; empty when it passed.
	Reasons []string
}

// GateResult is the overall outcome of the gate.
type GateResult string

// The outcomes of the gate.
const (
	GateOff    GateResult = "off"  // no thresholds and not strict: nothing can fail
	GatePassed GateResult = "pass" // nothing failed
	GateFailed GateResult = "fail" // a regression (or, strict, an untrustworthy comparison)
)

// Compare compares the new side against the old one.
func Compare(old, new *Side, opt Options) (*Report, error) {
	if old == nil || new == nil || old.Manifest == nil || new.Manifest == nil {
		return nil, errors.New("compare: a side has no manifest")
	}
	if opt.Alpha == 0 {
		opt.Alpha = DefaultAlpha
	}
	if !(opt.Alpha > 0 && opt.Alpha < 1) {
		return nil, fmt.Errorf("compare: alpha %v is not between 0 and 1", opt.Alpha)
	}
	if opt.JoinBy == "" {
		opt.JoinBy = ByID
	}
	if opt.JoinBy != ByID && opt.JoinBy != ByLabel {
		return nil, fmt.Errorf("compare: cannot join configs by %q (want id or label)", opt.JoinBy)
	}
	seen := map[string]bool{}
	for _, t := range opt.Thresholds {
		if m, err := ParseMetric(t.Metric); err != nil || m != t.Metric {
			// ParseMetric accepts FailedMetric too.
			return nil, fmt.Errorf("compare: threshold %s: %s is not a metric name", t, t.Metric)
		}
		if seen[t.Metric] {
			return nil, fmt.Errorf("compare: two thresholds for %s", t.Metric)
		}
		if !(t.Percent >= 0) || math.IsInf(t.Percent, 0) {
			return nil, fmt.Errorf("compare: threshold %s: the percentage must be a finite number ≥ 0", t)
		}
		seen[t.Metric] = true
	}

	oc, err := groupConfigs(old, opt.JoinBy)
	if err != nil {
		return nil, err
	}
	nc, err := groupConfigs(new, opt.JoinBy)
	if err != nil {
		return nil, err
	}
	rep := &Report{Alpha: opt.Alpha, CILevel: stats.Level, JoinBy: opt.JoinBy,
		Old: folderInfo(old, oc), New: folderInfo(new, nc), Env: Fingerprints(old.Manifest, new.Manifest)}

	thresholds := map[string]Threshold{}
	for _, t := range opt.Thresholds {
		thresholds[t.Metric] = t
	}
	var failures []string // the failed-rate and load rules' findings, one per config beyond them
	var missingLoad []string
	oldLoad, newLoad := loadRows(old, opt.JoinBy), loadRows(new, opt.JoinBy)
	for _, o := range oc.order {
		n := nc.byKey[o.key]
		if n == nil {
			rep.OnlyOld = append(rep.OnlyOld, o.ref)
			rep.Rows = append(rep.Rows, configRows(o, nil, opt.Alpha, thresholds)...)
			continue
		}
		rep.Rows = append(rep.Rows, configRows(o, n, opt.Alpha, thresholds)...)
		if t, ok := thresholds[FailedMetric]; ok {
			if why := failedRule(o, n, t); why != "" {
				failures = append(failures, why)
			}
		}
		for _, m := range loadMetrics {
			t, ok := thresholds[m.name]
			if !ok {
				continue
			}
			switch why, missing := loadRule(o, n, oldLoad, newLoad, t); {
			case missing && !opt.AllowMissing:
				missingLoad = append(missingLoad, why)
			case !missing && why != "":
				failures = append(failures, why)
			}
		}
	}
	failures = append(failures, missingLoad...)
	for _, n := range nc.order {
		if oc.byKey[n.key] == nil {
			rep.OnlyNew = append(rep.OnlyNew, n.ref)
			rep.Rows = append(rep.Rows, configRows(nil, n, opt.Alpha, thresholds)...)
		}
	}

	for _, s := range []struct {
		name string
		side *Side
		info Folder
	}{{"old", old, rep.Old}, {"new", new, rep.New}} {
		if s.info.Status != results.StatusComplete {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("the %s folder is %s, not complete: it may lack requests", s.name, s.info.Status))
		}
		for _, n := range s.side.Notes {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s folder: %s", s.name, n))
		}
	}
	if d := DifferingEnv(rep.Env); len(d) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the environments differ (%s): this compares different experiments", joinNames(d)))
	}
	if len(rep.OnlyOld)+len(rep.OnlyNew) > 0 && len(rep.OnlyOld) == len(oc.order) && len(rep.OnlyNew) == len(nc.order) && opt.JoinBy == ByID {
		rep.Warnings = append(rep.Warnings, "no config id is on both sides: a change to the experiment's fixed parts changes every id; "+
			"join by label to compare such runs")
	}
	if opt.Strict {
		// A folder whose reset did not take measured warm caches, not what it says it measured.
		failures = append(failures, cacheHitsAfterReset("old", old)...)
		failures = append(failures, cacheHitsAfterReset("new", new)...)
	}
	rep.Gate = evaluateGate(rep, opt, failures)
	return rep, nil
}

// failureRate returns the config's failed and measured requests and the failed share in
// percent (NaN without measured requests).
func (c *config) failureRate() (failed, measured int, pct float64) {
	for _, r := range c.measured {
		if r.Status != record.StatusOK {
			failed++
		}
	}
	measured = len(c.measured)
	pct = math.NaN()
	if measured > 0 {
		pct = 100 * float64(failed) / float64(measured)
	}
	return failed, measured, pct
}

// failedRule applies a threshold on the failed-request rate to a config on both sides: the
// rate is the share of measured requests that failed, and the threshold is in percentage
// points of that share (failed:+5% fails when it grew by more than 5 points). A side without
// measured requests counts as all failed on the new side and as no failures on the old one, so
// that a new run that sent nothing fails and an old one that sent nothing does not excuse it.
// It returns why the config fails the rule, or "".
func failedRule(o, n *config, t Threshold) string {
	of, om, op := o.failureRate()
	nf, nm, np := n.failureRate()
	if om == 0 {
		op = 0
	}
	if nm == 0 {
		np = 100
	}
	if !t.Exceeded(np - op) {
		return ""
	}
	return fmt.Sprintf("%s failed: %d of %d measured requests failed, was %d of %d (%+.3g points) is beyond %s",
		o.ref.Label, nf, nm, of, om, np-op, t.Limit())
}

// config is one config of one side and its measured requests.
type config struct {
	key      string
	ref      ConfigRef
	measured []*record.Request
	loaded   bool // a load section, or rows sent under one: the load-only metrics apply
}

type configSet struct {
	order []*config
	byKey map[string]*config
}

// groupConfigs lists a side's configs in expansion order, then any config that only its
// requests name, in order of appearance, each with its measured requests.
func groupConfigs(s *Side, by JoinBy) (*configSet, error) {
	set := &configSet{byKey: map[string]*config{}}
	byID := map[string]*config{}
	configs := append([]experiment.Config(nil), s.Manifest.Configs...)
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].Index < configs[j].Index })
	add := func(id, label string) (*config, error) {
		key := id
		if by == ByLabel {
			key = label
		}
		if prev := set.byKey[key]; prev != nil {
			return nil, fmt.Errorf("%s: configs %s and %s have the same label %q: they cannot be joined by label", s.Dir, prev.ref.ID, id, label)
		}
		c := &config{key: key, ref: ConfigRef{ID: id, Label: label}}
		set.byKey[key] = c
		set.order = append(set.order, c)
		byID[id] = c
		return c, nil
	}
	for _, c := range configs {
		if byID[c.ID] != nil {
			continue
		}
		g, err := add(c.ID, c.Label)
		if err != nil {
			return nil, err
		}
		g.loaded = c.Load != nil
	}
	for i := range s.Requests {
		r := &s.Requests[i]
		c := byID[r.ConfigID]
		if c == nil {
			var err error
			if c, err = add(r.ConfigID, r.ConfigID); err != nil {
				return nil, err
			}
		}
		// The rows that results.Summarize describes: the measure phase. Failed ones are
		// counted, not compared.
		if r.Phase == record.PhaseMeasure {
			c.measured = append(c.measured, r)
		}
		c.loaded = c.loaded || r.LoadMode != record.LoadNone || r.SendLag != nil
	}
	return set, nil
}

func folderInfo(s *Side, set *configSet) Folder {
	f := Folder{Dir: s.Dir, Experiment: s.Manifest.Experiment.Name, Status: s.Status, Start: s.Manifest.Start.UTC(),
		RunnerVersion: s.Manifest.Runner.Version, Configs: len(set.order)}
	for _, c := range set.order {
		failed, measured, _ := c.failureRate()
		f.Measured += measured
		f.Failed += failed
	}
	return f
}

// values returns the config's values of metric m over its successful measured requests, and the
// number of its failed measured requests.
func (c *config) values(m results.Metric) (xs []float64, failed int) {
	for _, r := range c.measured {
		if r.Status != record.StatusOK {
			failed++
			continue
		}
		if v, ok := m.Value(r); ok {
			xs = append(xs, v)
		}
	}
	return xs, failed
}

// configRows compares every metric of a config; o or n is nil for a config on one side only.
func configRows(o, n *config, alpha float64, thresholds map[string]Threshold) []Row {
	var rows []Row
	for _, m := range results.Metrics() {
		if m.LoadOnly() && !(o != nil && o.loaded) && !(n != nil && n.loaded) {
			continue // neither side was under load: as summaries do, leave the metric out
		}
		row := Row{Metric: m.Name, Unit: m.Unit, Presence: Both, ChangePct: math.NaN(), P: math.NaN(), MinP: math.NaN(),
			Verdict: Untested}
		var ox, nx []float64
		switch {
		case n == nil:
			row.Presence, row.ConfigID, row.Label = OldOnly, o.ref.ID, o.ref.Label
		case o == nil:
			row.Presence, row.ConfigID, row.Label = NewOnly, n.ref.ID, n.ref.Label
		default:
			row.ConfigID, row.Label = o.ref.ID, o.ref.Label
		}
		if o != nil {
			ox, row.Old.Failed = o.values(m)
		}
		if n != nil {
			nx, row.New.Failed = n.values(m)
		}
		if m.PresentOnly() && len(ox) == 0 && len(nx) == 0 {
			continue // neither side has a value (no server timings): as summaries do, leave it out
		}
		row.Old = describe(ox, row.Old.Failed)
		row.New = describe(nx, row.New.Failed)
		t, gated := thresholds[m.Name]
		if gated && row.Presence != NewOnly {
			row.Threshold = t.Limit()
		}
		if row.Presence == Both {
			compareSamples(&row, ox, nx, alpha)
			if gated {
				row.Gate = gateRow(&row, t, alpha)
			}
		}
		if gated && row.Presence != NewOnly && row.Old.N > 0 && row.New.N == 0 {
			// The baseline had values and the new run has none: the new run failed, or lost
			// the config. That is not a comparison that could not be made; it is a run that did
			// not measure what it had to.
			row.Gate = GateMissing
		}
		rows = append(rows, row)
	}
	return rows
}

func describe(xs []float64, failed int) Sample {
	s := stats.Summarize(xs)
	return Sample{N: s.N, Failed: failed, Median: s.Median, CILow: s.MedianCILow, CIHigh: s.MedianCIHigh}
}

// compareSamples fills the test, the change and the verdict of a row whose config is on both
// sides, with its warnings.
func compareSamples(row *Row, ox, nx []float64, alpha float64) {
	if row.Old.Failed > 0 || row.New.Failed > 0 {
		row.Warnings = append(row.Warnings, fmt.Sprintf("failed requests: old %d, new %d", row.Old.Failed, row.New.Failed))
	}
	if len(ox) == 0 || len(nx) == 0 {
		var sides []string
		if len(ox) == 0 {
			sides = append(sides, "old")
		}
		if len(nx) == 0 {
			sides = append(sides, "new")
		}
		row.Warnings = append(row.Warnings, fmt.Sprintf("no values on the %s side: not compared", joinAnd(sides)))
		return
	}
	if row.Old.Median != 0 {
		row.ChangePct = (row.New.Median - row.Old.Median) / math.Abs(row.Old.Median) * 100
	} else if row.New.Median != 0 {
		row.Warnings = append(row.Warnings, "the old median is 0: no percent change")
	} else {
		row.ChangePct = 0
	}
	mw, err := stats.MannWhitneyU(ox, nx)
	if err != nil {
		// The values are finite and both samples non-empty, which is all the test needs.
		row.Warnings = append(row.Warnings, "not tested: "+err.Error())
		return
	}
	row.P, row.Test = mw.P, mw.Method
	row.MinP = stats.MannWhitneyMinP(len(ox), len(nx))
	row.Significant = row.P < alpha
	if row.MinP >= alpha {
		row.Warnings = append(row.Warnings, fmt.Sprintf("n=%d+%d: too few values to detect any change at alpha %g "+
			"(the smallest possible p-value is %.3g, need at least %d a side)", len(ox), len(nx), alpha, row.MinP, stats.MannWhitneyMinN(alpha)))
	}
	for _, side := range []struct {
		name string
		s    Sample
	}{{"old", row.Old}, {"new", row.New}} {
		if math.IsNaN(side.s.CILow) {
			row.Warnings = append(row.Warnings, fmt.Sprintf("n=%d: too few %s values for a %g%% interval of the median (need %d)",
				side.s.N, side.name, stats.Level*100, stats.MinSamplesForCI(stats.Level)))
		}
	}
	switch {
	case !row.Significant:
		row.Verdict = Same
	case row.Unit == "ms" && row.ChangePct > 0:
		row.Verdict = Worse
	case row.Unit == "ms" && row.ChangePct < 0:
		row.Verdict = Better
	default:
		row.Verdict = Changed
	}
	if row.Significant && row.Unit != "ms" {
		switch row.Metric {
		case "output_tokens":
			row.Warnings = append(row.Warnings, fmt.Sprintf("output_tokens changed significantly (%s): the requests generate different lengths, "+
				"so this is a different experiment", pct(row.ChangePct)))
		default:
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s changed significantly (%s): the server streams its output differently, "+
				"so tpot_event is not comparable", row.Metric, pct(row.ChangePct)))
		}
	}
}

// gateRow applies a threshold to a compared row.
func gateRow(row *Row, t Threshold, alpha float64) GateVerdict {
	switch {
	case row.Old.N == 0 || row.New.N == 0 || math.IsNaN(row.P) || row.MinP >= alpha:
		return GateUntestable
	case row.Significant && math.IsNaN(row.ChangePct):
		return GateUntestable
	case row.Significant && t.Exceeded(row.ChangePct):
		return GateFail
	default:
		return GateOK
	}
}

func evaluateGate(rep *Report, opt Options, failures []string) Gate {
	g := Gate{Thresholds: append([]Threshold(nil), opt.Thresholds...), Strict: opt.Strict}
	// The missing metrics of a config make one reason, not one per metric.
	var missingOrder []*Row
	missing := map[string][]string{}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.Gate == GateMissing && !opt.AllowMissing {
			if missing[r.ConfigID] == nil {
				missingOrder = append(missingOrder, r)
			}
			missing[r.ConfigID] = append(missing[r.ConfigID], r.Metric)
		}
	}
	for _, r := range rep.Rows {
		switch {
		case r.Gate == GateFail:
			g.Reasons = append(g.Reasons, fmt.Sprintf("%s %s: %s (%s) is beyond %s", r.Label, r.Metric, pct(r.ChangePct), pEq(r.P, opt.Alpha), r.Threshold))
		case opt.Strict && r.Gate == GateUntestable:
			g.Reasons = append(g.Reasons, fmt.Sprintf("%s %s: cannot be tested (n=%d+%d)", r.Label, r.Metric, r.Old.N, r.New.N))
		case opt.Strict && r.Presence == Both && r.Unit != "ms" && r.Significant:
			g.Reasons = append(g.Reasons, fmt.Sprintf("%s %s: changed significantly (%s)", r.Label, r.Metric, pct(r.ChangePct)))
		}
	}
	for _, r := range missingOrder {
		if r.Presence == OldOnly {
			g.Reasons = append(g.Reasons, fmt.Sprintf("config %s (%s) is missing from the new run", r.Label, r.ConfigID))
			continue
		}
		g.Reasons = append(g.Reasons, fmt.Sprintf("%s (%s): no %s values in the new run, which the old run has (%s failed)",
			r.Label, r.ConfigID, joinAnd(missing[r.ConfigID]), tabular.Plural(r.New.Failed, "measured request")))
	}
	// A config the new run lost fails any gate, not only one on a metric it had values of: a
	// gate of failed:+N% alone must not pass a run that dropped configs.
	gone := map[string]bool{}
	for _, c := range rep.OnlyOld {
		if len(opt.Thresholds) > 0 && !opt.AllowMissing && len(missing[c.ID]) == 0 {
			g.Reasons = append(g.Reasons, fmt.Sprintf("config %s (%s) is missing from the new run", c.Label, c.ID))
		}
		gone[c.ID] = len(opt.Thresholds) > 0 && !opt.AllowMissing
	}
	g.Reasons = append(g.Reasons, failures...)
	if opt.Strict {
		if d := DifferingEnv(rep.Env); len(d) > 0 {
			g.Reasons = append(g.Reasons, "the environments differ: "+joinNames(d))
		}
		for _, c := range rep.OnlyOld {
			if !gone[c.ID] {
				g.Reasons = append(g.Reasons, fmt.Sprintf("config %s (%s) is only in the old folder", c.Label, c.ID))
			}
		}
		for _, c := range rep.OnlyNew {
			g.Reasons = append(g.Reasons, fmt.Sprintf("config %s (%s) is only in the new folder", c.Label, c.ID))
		}
	}
	switch {
	case len(g.Reasons) > 0:
		g.Result = GateFailed
	case len(opt.Thresholds) == 0 && !opt.Strict:
		g.Result = GateOff
	default:
		g.Result = GatePassed
	}
	return g
}

// Failed reports whether the gate failed.
func (g Gate) Failed() bool { return g.Result == GateFailed }

// pct formats a change in percent with its sign: +9.66%, -3.20%, +0.00%.
func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", x)
}

// pValue formats a p-value for people: three decimals, or <0.001. Where three decimals would
// put p on the other side of alpha (0.0496 is not "0.050" when alpha is 0.05), it shows as many
// more digits as it takes.
func pValue(p, alpha float64) string {
	switch {
	case math.IsNaN(p):
		return "-"
	case p < 0.001:
		return "<0.001"
	}
	for digits := 3; ; digits++ {
		s := strconv.FormatFloat(p, 'f', digits, 64)
		shown, _ := strconv.ParseFloat(s, 64)
		if (shown < alpha) == (p < alpha) || digits >= 17 {
			return s
		}
	}
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	s := xs[0]
	for _, x := range xs[1 : len(xs)-1] {
		s += ", " + x
	}
	return s + " and " + xs[len(xs)-1]
}

// cacheHitsAfterReset says, one sentence per config, where a side's measured requests hit the
// prefix cache although it was reset before them (record.Request.CacheHitAfterReset).
func cacheHitsAfterReset(side string, s *Side) []string {
	var order []string
	hits := map[string]int{}
	for i := range s.Requests {
		r := &s.Requests[i]
		if r.Phase != record.PhaseMeasure || !r.CacheHitAfterReset {
			continue
		}
		if hits[r.ConfigID] == 0 {
			order = append(order, r.ConfigID)
		}
		hits[r.ConfigID]++
	}
	out := make([]string, 0, len(order))
	for _, id := range order {
		out = append(out, fmt.Sprintf("config %s in the %s folder: %s hit the prefix cache after it was reset, so the reset did not take",
			id, side, tabular.Plural(hits[id], "measured request")))
	}
	return out
}
