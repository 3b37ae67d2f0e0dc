package merge_test

import (
	"path/filepath"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/compare"
	"github.com/onelayerdown/runner/runner/internal/merge"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestMergedDiffsAsSingle merges the shards of a run and compares the merged folder with the
// run of the same plan on one machine, strictly: the same configs, the same environment and
// no metric that changed.
func TestMergedDiffsAsSingle(t *testing.T) {
	single, shards := merge.FleetRuns(t)
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := merge.Folders(out, shards, merge.Options{}); err != nil {
		t.Fatal(err)
	}
	old, err := compare.Read(single)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := results.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compare.Compare(old, merged, compare.Options{Strict: true,
		Thresholds: []compare.Threshold{{Metric: "ttft_ms", Direction: compare.Up, Percent: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.OnlyOld) != 0 || len(rep.OnlyNew) != 0 {
		t.Errorf("configs on one side only: %v, %v", rep.OnlyOld, rep.OnlyNew)
	}
	for _, e := range rep.Env {
		if e.Old != e.New {
			t.Errorf("environment field %s differs: %q, %q", e.Name, e.Old, e.New)
		}
	}
	tested := 0
	for _, r := range rep.Rows {
		if r.Verdict != compare.Same && r.Verdict != compare.Untested {
			t.Errorf("%s %s: %s", r.Label, r.Metric, r.Verdict)
		}
		if r.Verdict == compare.Same {
			tested++
		}
	}
	if tested == 0 || rep.Gate.Result != compare.GatePassed || len(rep.Warnings) != 0 {
		t.Errorf("%d rows tested, gate %s, warnings %q", tested, rep.Gate.Result, rep.Warnings)
	}
}
