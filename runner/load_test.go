package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// simLoadExperiment is a closed-loop sweep against the simulator with continuous batching.
func simLoadExperiment(marker string, reps int) string {
	return fmt.Sprintf(`
version: 1
name: e2e
server:
  engine: sim
  model: %s
  max_model_len: 512
  args: ["--decode-per-token", "15ms", "--max-num-seqs", "4", "--decode-per-seq", "1ms"]
request:
  api: completions
  ignore_eos: true
  prompt_tokens: 32
  max_tokens: 8
load:
  prompts: distinct
matrix:
  load.concurrency: [2, 4]
slo: {ttft_ms: 1000}
warmup: 2
repetitions: %d
`, marker, reps)
}

// TestRunLoadResumedWhole interrupts a run inside its first load point and resumes it: the
// rows of the load point cut short move to discarded/, the manifest says so, and the load
// point runs again whole, so the folder ends with every request exactly once and no row of the
// interrupted load point mixed with the new ones.
func TestRunLoadResumedWhole(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the runner and runs the simulator")
	}
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("load-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simLoadExperiment(marker, 6))
	root := filepath.Join(dir, "results")
	log := interruptRun(t, bin, file, root, func(p *os.Process, line string) bool {
		if strings.HasPrefix(line, "[5/") { // the first request, then 4 of the first load point's 8
			if err := p.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			return true
		}
		return false
	})
	checkNoSurvivors(t, marker)
	folder := onlyFolder(t, root, "e2e")
	cut := readRequests(t, folder)
	if len(cut) < 5 || len(cut) >= 17 {
		t.Fatalf("%d rows after the interrupt, want some of the first load point\n%s", len(cut), log)
	}
	first := cut[0].ConfigID

	code, stdout, stderr := runBinary(t, bin, file, "--resume", folder)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "1 load point(s) were cut short ("+first+")") {
		t.Errorf("resume does not say it discarded the cut-short load point:\n%s", stderr)
	}
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != results.StatusComplete || len(man.Discarded) != 1 || man.Discarded[0].ConfigID != first || man.Discarded[0].Rows != len(cut) {
		t.Errorf("manifest: status %s, discarded %+v, want the %d rows of %s", man.Status, man.Discarded, len(cut), first)
	}
	f, err := os.Open(filepath.Join(folder, "discarded", results.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var moved []record.Request
	sc := results.RequestsCSV.NewScanner(f, "discarded/"+results.RequestsFile)
	for sc.Scan() {
		moved = append(moved, sc.Record())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(moved) != len(cut) {
		t.Errorf("discarded/ holds %d rows, want %d", len(moved), len(cut))
	}
	reqs := readRequests(t, folder)
	if len(reqs) != 17 {
		t.Fatalf("%d rows after resume, want 17 (1 first + 2 × 8)", len(reqs))
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		id := results.RequestID(r.ConfigID, r.Seq)
		if seen[id] {
			t.Errorf("request %s recorded twice", id)
		}
		seen[id] = true
		if r.Status != record.StatusOK {
			t.Errorf("%s: %s %s", id, r.ErrorClass, r.Error)
		}
		if r.Phase != record.PhaseFirst && (r.LoadMode != record.LoadClosed || r.InFlight < 1 || r.InFlight > r.Concurrency) {
			t.Errorf("%s: load %q, in flight %d of %d", id, r.LoadMode, r.InFlight, r.Concurrency)
		}
		// Every row of the interrupted load point is from the resumed run.
		if r.ConfigID == first && !r.Start.After(cut[len(cut)-1].Start) {
			t.Errorf("%s started at %v, before the interrupt: a row of the cut-short load point was kept", id, r.Start)
		}
	}
	// The summary and load.csv describe the whole folder.
	loaded, err := results.ReadAll(folder)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Load) != 2 || loaded.Load[0].Measured != 6 || loaded.Load[1].Concurrency != 4 || loaded.Load[0].Good == nil {
		t.Errorf("load.csv: %+v", loaded.Load)
	}
}
