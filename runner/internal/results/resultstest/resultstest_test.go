package resultstest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// builder returns a folder of two configs on one server whose requests draw their TTFT from
// the random source.
func builder(status results.Status) *resultstest.Builder {
	var configs []experiment.Config
	for i, mt := range []int{16, 32} {
		configs = append(configs, experiment.Config{ID: fmt.Sprintf("c%d", i), ServerID: "s0", Index: i,
			Request: experiment.Request{MaxTokens: mt}, Repetitions: 3, Warmup: 1})
	}
	return &resultstest.Builder{
		Experiment: resultstest.Experiment("builder-test"),
		Configs:    configs,
		Servers:    []results.ServerInfo{{ServerID: "s0", Engine: "sim", Model: "tiny", BootStart: resultstest.Start}},
		Logs:       map[string]string{"s0": "ready\n"},
		Seed:       [2]uint64{1, 2},
		Status:     status,
		Request: func(d resultstest.Draw) record.Request {
			phase, rep := d.Phase()
			return record.Request{ConfigID: d.Config.ID, ServerID: d.Config.ServerID, Seq: d.Seq, Phase: phase, Rep: rep,
				Start: resultstest.Start.Add(time.Duration(d.N) * time.Second), Status: record.StatusOK,
				TTFT: resultstest.Ms(20 + d.Rand.Float64()), MaxTokens: d.Config.Request.MaxTokens}
		},
	}
}

func TestWriteReadsBackAsRecords(t *testing.T) {
	b := builder("")
	want := b.Records()
	if len(want) != 10 || want[9].Seq != 4 || want[9].Phase != record.PhaseMeasure || want[1].Phase != record.PhaseWarmup {
		t.Fatalf("records %+v, want 5 per config: first, warm-up, 3 measured", want)
	}
	if again := b.Records(); !reflect.DeepEqual(again, want) {
		t.Errorf("a second Records differs: the random source is not started afresh")
	}
	dir := b.Write(t, t.TempDir())
	got, err := results.ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the folder does not read back as Records")
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != results.StatusComplete || !m.Start.Equal(resultstest.Start) || m.Machine.CPUs != resultstest.Machine().CPUs ||
		len(m.Servers) != 1 || m.Servers[0].LogFile != "logs/s0.log" {
		t.Errorf("manifest %+v", m)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "logs", "s0.log")); err != nil || string(log) != "ready\n" {
		t.Errorf("server log %q, %v", log, err)
	}
}

func TestWriteRunningLeavesAKilledRun(t *testing.T) {
	root := t.TempDir()
	dir := builder(results.StatusRunning).Write(t, root)
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != results.StatusRunning {
		t.Errorf("status %q, want running", m.Status)
	}
	if _, err := os.Stat(filepath.Join(dir, results.SummaryFile)); !os.IsNotExist(err) {
		t.Errorf("a killed run has a summary (%v)", err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "builder-test"))
	if len(entries) != 1 {
		t.Errorf("%d entries beside the folder, want only the folder", len(entries))
	}
}

func TestWriteDirAndEditManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "x", "baseline")
	if got := builder("").WriteDir(t, dir); got != dir {
		t.Fatalf("WriteDir returned %s, want %s", got, dir)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("%d entries beside the folder, want only the folder", len(entries))
	}
	resultstest.EditManifest(t, dir, func(m map[string]any) { m["schema_version"] = 2 })
	if _, err := results.ReadManifest(dir); err == nil {
		t.Errorf("a manifest of version 2 reads")
	}
}

func TestDrawPhase(t *testing.T) {
	c := experiment.Config{Warmup: 2, Repetitions: 3}
	tests := []struct {
		seq   int
		phase record.Phase
		rep   int
	}{
		{0, record.PhaseFirst, 0}, {1, record.PhaseWarmup, 0}, {2, record.PhaseWarmup, 1},
		{3, record.PhaseMeasure, 0}, {5, record.PhaseMeasure, 2},
	}
	for _, tt := range tests {
		phase, rep := resultstest.Draw{Config: c, Seq: tt.seq}.Phase()
		if phase != tt.phase || rep != tt.rep {
			t.Errorf("seq %d: %s %d, want %s %d", tt.seq, phase, rep, tt.phase, tt.rep)
		}
	}
}
