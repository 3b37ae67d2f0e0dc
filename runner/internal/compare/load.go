package compare

import (
	"fmt"
	"math"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// The gate's rules on a config's load point (see results.LoadRow). Each is one value per config,
// not a distribution: there is no significance test, and a rule fails when the relative change
// of the value is beyond its threshold. Like FailedMetric they are not results metrics: they
// have no rows of their own, only gate reasons.
const (
	GoodputMetric    = "goodput"    // requests/s meeting every SLO bound (goodput_rps)
	ThroughputMetric = "throughput" // output tokens/s (output_tokens_per_s)
	RateMetric       = "rate"       // achieved requests/s (achieved_rate_rps)
)

// loadMetric describes one load rule: its names and how to read its value from a load row.
type loadMetric struct {
	name   string // the canonical name, e.g. goodput
	column string // the load.csv column, e.g. goodput_rps
	unit   string
	value  func(*results.LoadRow) float64
}

var loadMetrics = []loadMetric{
	{GoodputMetric, "goodput_rps", "requests/s", func(l *results.LoadRow) float64 { return l.Goodput }},
	{ThroughputMetric, "output_tokens_per_s", "tokens/s", func(l *results.LoadRow) float64 { return l.OutputTokensPerS }},
	{RateMetric, "achieved_rate_rps", "requests/s", func(l *results.LoadRow) float64 { return l.AchievedRate }},
}

// loadMetricNamed returns the load rule that name (canonical or column name) stands for.
func loadMetricNamed(name string) (loadMetric, bool) {
	for _, m := range loadMetrics {
		if name == m.name || name == m.column {
			return m, true
		}
	}
	return loadMetric{}, false
}

// loadRows indexes a side's load rows by the key configs are joined by; nil when the folder
// has no load.csv.
func loadRows(s *Side, by JoinBy) map[string]*results.LoadRow {
	if s.Load == nil {
		return nil
	}
	out := map[string]*results.LoadRow{}
	for i := range s.Load {
		l := &s.Load[i]
		key := l.ConfigID
		if by == ByLabel {
			key = l.Label
		}
		out[key] = l
	}
	return out
}

// loadRule applies a threshold on a load figure to a config on both sides. It returns why the
// config fails the rule, or "", and whether the new side lacks a value that the old side has
// (the gate's missing, which AllowMissing excuses).
func loadRule(o, n *config, old, new map[string]*results.LoadRow, t Threshold) (reason string, missing bool) {
	m, _ := loadMetricNamed(t.Metric)
	ov, nv := math.NaN(), math.NaN()
	if l := old[o.key]; l != nil {
		ov = m.value(l)
	}
	if l := new[n.key]; l != nil {
		nv = m.value(l)
	}
	switch {
	case math.IsNaN(ov):
		return "", false // nothing to hold the new run to
	case math.IsNaN(nv):
		if new == nil {
			return fmt.Sprintf("%s (%s): no %s in the new run, which has no %s, and the old run has (%.4g %s)",
				o.ref.Label, o.ref.ID, m.name, results.LoadFile, ov, m.unit), true
		}
		return fmt.Sprintf("%s (%s): no %s in the new run, which the old run has (%.4g %s)", o.ref.Label, o.ref.ID, m.name, ov, m.unit), true
	case ov == 0:
		return "", false // no relative change from zero
	}
	change := (nv - ov) / math.Abs(ov) * 100
	if !t.Exceeded(change) {
		return "", false
	}
	return fmt.Sprintf("%s %s: %.4g → %.4g %s (%s) is beyond %s (one value per config: no significance test, the relative change is the verdict)",
		o.ref.Label, m.name, ov, nv, m.unit, pct(change), t.Limit()), false
}
