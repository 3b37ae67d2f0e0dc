package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/orchestrate"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// TestResumeRefusesAnotherShuffle interrupts a run in shuffled order and resumes it: a folder
// whose order was drawn by another algorithm (as an older runner's was) is refused with a
// message that says why, since the same seed would give another order; one drawn by this
// runner's algorithm resumes.
func TestResumeRefusesAnotherShuffle(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("shuffle-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--decode-per-token", "15ms"`, 4)+"order: {mode: shuffled, seed: 3}\n")
	root := filepath.Join(dir, "results")
	interruptRun(t, bin, file, root, func(p *os.Process, line string) bool {
		if strings.HasPrefix(line, "[4/") {
			p.Signal(syscall.SIGINT)
			return true
		}
		return false
	})
	checkNoSurvivors(t, marker)
	folder := onlyFolder(t, root, "e2e")
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Runner.Schedule != orchestrate.ScheduleVersion {
		t.Fatalf("manifest schedule %q, want %q", man.Runner.Schedule, orchestrate.ScheduleVersion)
	}
	setSchedule := func(v string) {
		resultstest.EditManifest(t, folder, func(m map[string]any) {
			runner := m["runner"].(map[string]any)
			if v == "" {
				delete(runner, "schedule")
			} else {
				runner["schedule"] = v
			}
		})
	}
	setSchedule("")
	code, stdout, stderr := runBinary(t, bin, file, "--resume", folder)
	if code != 2 || !strings.Contains(stderr, "shuffled order was drawn by an earlier one") {
		t.Fatalf("resume of an older shuffle: exit %d, want 2 and why\n%s\n%s", code, stdout, stderr)
	}
	setSchedule(orchestrate.ScheduleVersion)
	if code, stdout, stderr := runBinary(t, bin, file, "--resume", folder); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	if n := len(readRequests(t, folder)); n != 1+2*(1+4) {
		t.Errorf("%d requests after resume, want 11", n)
	}
}
