package compare

import (
	"fmt"
	"math"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

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

// describe summarises one side's values of one metric: their number and median, with its
// confidence interval.
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
