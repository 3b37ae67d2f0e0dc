package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

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

// evaluateGate decides the gate over the report's rows and the per-config findings of the
// failed-rate and load rules: every reason it fails, in the order a reader checks them, and
// its result.
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

// cacheHitsAfterReset says, one sentence per config, where a side's measured requests hit the
// prefix cache although it was reset before them (record.Request.CacheHitAfterReset).
func cacheHitsAfterReset(side string, s *Side) []string {
	var hit []*results.ConfigDigest
	for _, c := range digestOf(s).Configs() {
		if c.HitsMeasured > 0 {
			hit = append(hit, c)
		}
	}
	slices.SortFunc(hit, func(a, b *results.ConfigDigest) int { return cmp.Compare(a.FirstHit, b.FirstHit) })
	out := make([]string, 0, len(hit))
	for _, c := range hit {
		out = append(out, fmt.Sprintf("config %s in the %s folder: %s hit the prefix cache after it was reset, so the reset did not take",
			c.Config.ID, side, tabular.Plural(c.HitsMeasured, "measured request")))
	}
	return out
}
