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
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
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

// Read reads the result folder dir for a comparison. It fails on a folder it cannot read,
// including one of a format version it does not know. It keeps only the figures of each
// request (results.ReadDigest), not its events or texts, so that a folder of any size is
// compared in the memory of a few numbers per request.
func Read(dir string) (*Side, error) { return results.ReadDigest(dir) }

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
		return nil, errors.New("a side has no manifest")
	}
	if err := opt.check(); err != nil {
		return nil, err
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
	failures := joinConfigs(rep, old, new, oc, nc, opt)
	rep.Warnings = append(rep.Warnings, folderWarnings(rep, old, new, oc, nc, opt.JoinBy)...)
	if opt.Strict {
		// A folder whose reset did not take measured warm caches, not what it says it measured.
		failures = append(failures, cacheHitsAfterReset("old", old)...)
		failures = append(failures, cacheHitsAfterReset("new", new)...)
	}
	rep.Gate = evaluateGate(rep, opt, failures)
	return rep, nil
}

// check fills in the defaults of opt and checks it: the significance level, the way configs are
// joined, and the thresholds, at most one a metric.
func (opt *Options) check() error {
	if opt.Alpha == 0 {
		opt.Alpha = DefaultAlpha
	}
	if !(opt.Alpha > 0 && opt.Alpha < 1) {
		return fmt.Errorf("alpha %v is not between 0 and 1", opt.Alpha)
	}
	if opt.JoinBy == "" {
		opt.JoinBy = ByID
	}
	if opt.JoinBy != ByID && opt.JoinBy != ByLabel {
		return fmt.Errorf("cannot join configs by %q (want id or label)", opt.JoinBy)
	}
	seen := map[string]bool{}
	for _, t := range opt.Thresholds {
		if m, err := ParseMetric(t.Metric); err != nil || m != t.Metric {
			// ParseMetric accepts FailedMetric too.
			return fmt.Errorf("threshold %s: %s is not a metric name", t, t.Metric)
		}
		if seen[t.Metric] {
			return fmt.Errorf("two thresholds for %s", t.Metric)
		}
		if !(t.Percent >= 0) || math.IsInf(t.Percent, 0) {
			return fmt.Errorf("threshold %s: the percentage must be a finite number ≥ 0", t)
		}
		seen[t.Metric] = true
	}
	return nil
}

// joinConfigs adds to rep the rows of every config, those of the old side first, in their
// order, then those of the new side only, and notes the configs on one side only. It returns
// the findings of the gate's per-config rules (the failed rate and the load rules), one for each
// config beyond a rule; a load value the new side lacks comes after the others, and only
// without opt.AllowMissing.
func joinConfigs(rep *Report, old, new *Side, oc, nc *configSet, opt Options) (failures []string) {
	thresholds := map[string]Threshold{}
	for _, t := range opt.Thresholds {
		thresholds[t.Metric] = t
	}
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
	for _, n := range nc.order {
		if oc.byKey[n.key] == nil {
			rep.OnlyNew = append(rep.OnlyNew, n.ref)
			rep.Rows = append(rep.Rows, configRows(nil, n, opt.Alpha, thresholds)...)
		}
	}
	return append(failures, missingLoad...)
}

// folderWarnings says what about the two folders as a whole makes the comparison doubtful: a
// folder that is not complete, the notes of reading either, differing environments, and, when
// configs are joined by id, no id on both sides.
func folderWarnings(rep *Report, old, new *Side, oc, nc *configSet, by JoinBy) []string {
	var warnings []string
	for _, s := range []struct {
		name string
		side *Side
		info Folder
	}{{"old", old, rep.Old}, {"new", new, rep.New}} {
		if s.info.Status != results.StatusComplete {
			warnings = append(warnings, fmt.Sprintf("the %s folder is %s, not complete: it may lack requests", s.name, s.info.Status))
		}
		for _, n := range s.side.Notes {
			warnings = append(warnings, fmt.Sprintf("%s folder: %s", s.name, n))
		}
	}
	if d := DifferingEnv(rep.Env); len(d) > 0 {
		warnings = append(warnings, fmt.Sprintf("the environments differ (%s): this compares different experiments", joinNames(d)))
	}
	if len(rep.OnlyOld)+len(rep.OnlyNew) > 0 && len(rep.OnlyOld) == len(oc.order) && len(rep.OnlyNew) == len(nc.order) && by == ByID {
		warnings = append(warnings, "no config id is on both sides: a change to the experiment's fixed parts changes every id; "+
			"join by label to compare such runs")
	}
	return warnings
}
