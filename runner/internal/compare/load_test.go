package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// loadSide is a folder of the configs a and b whose load.csv holds rows (nil: no load.csv).
func loadSide(rows []results.LoadRow) *Side {
	return &Side{Dir: "x", Manifest: &results.Manifest{Configs: testConfigs(3, "a", "b")}, Status: results.StatusComplete, Load: rows}
}

func loadPoint(label string, goodput, tokens, rate float64) results.LoadRow {
	return results.LoadRow{ConfigID: "id-" + label, Label: label, Goodput: goodput, OutputTokensPerS: tokens, AchievedRate: rate}
}

func TestLoadGates(t *testing.T) {
	nan := math.NaN()
	base := []results.LoadRow{loadPoint("a", 10, 1000, 20), loadPoint("b", nan, 500, 5)}
	tests := []struct {
		name         string
		fail         string
		old, new     []results.LoadRow
		allowMissing bool
		want         []string // substrings of the gate's reasons, in order; none: the gate passes
	}{
		{name: "within", fail: "goodput:-5%,throughput:-10%,rate:-10%", old: base,
			new: []results.LoadRow{loadPoint("a", 9.6, 950, 19), loadPoint("b", nan, 460, 4.6)}},
		{name: "goodput drop", fail: "goodput:-5%", old: base,
			new:  []results.LoadRow{loadPoint("a", 9, 1000, 20), loadPoint("b", nan, 500, 5)},
			want: []string{"a goodput: 10 → 9 requests/s (-10.00%) is beyond -5% (one value per config: no significance test"}},
		{name: "throughput and rate", fail: "throughput:-10%,achieved_rate_rps:-10%", old: base,
			new:  []results.LoadRow{loadPoint("a", 10, 800, 20), loadPoint("b", nan, 500, 4)},
			want: []string{"a throughput: 1000 → 800 tokens/s (-20.00%) is beyond -10%", "b rate: 5 → 4 requests/s (-20.00%) is beyond -10%"}},
		{name: "no SLO on either side", fail: "goodput:-5%", old: base, new: base},
		{name: "new folder without load.csv", fail: "throughput:-10%", old: base, new: nil,
			want: []string{"a (id-a): no throughput in the new run, which has no load.csv", "b (id-b): no throughput"}},
		{name: "missing allowed", fail: "throughput:-10%", old: base, new: nil, allowMissing: true},
		{name: "old folder without load.csv", fail: "goodput:-5%,throughput:-10%", old: nil, new: base},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th, err := ParseThresholds(tc.fail)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(loadSide(tc.old), loadSide(tc.new), Options{Thresholds: th, AllowMissing: tc.allowMissing})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Gate.Failed(); got != (len(tc.want) > 0) || len(rep.Gate.Reasons) != len(tc.want) {
				t.Fatalf("gate %s, reasons %q", rep.Gate.Result, rep.Gate.Reasons)
			}
			for i, w := range tc.want {
				if !strings.Contains(rep.Gate.Reasons[i], w) {
					t.Errorf("reason %d: %q, want it to contain %q", i, rep.Gate.Reasons[i], w)
				}
			}
		})
	}
}
