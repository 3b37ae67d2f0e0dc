package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/report"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// sweeps are two runs of a sweep over prompt and output lengths: an older server with one
// token per event, and a newer, faster one with multi-step scheduling and one failed request.
var sweeps = map[string]resultstest.Sweep{
	"old": {EngineVersion: "0.6.1", Prompts: []int{64, 256, 512}, Outputs: []int{16, 64},
		A: 24, B: 0.072, C0: 11.5, CP: 0.004, Chunk: []float64{1}, Seed: 101},
	"new": {EngineVersion: "0.6.3", Args: []string{"--num-scheduler-steps", "4"}, Prompts: []int{64, 256, 512},
		Outputs: []int{16, 64}, A: 16, B: 0.05, C0: 9.5, CP: 0.003, Chunk: []float64{0.45, 0.3, 0.17, 0.08},
		Fail: [2]int{4, 5}, Seed: 202},
}

// sweepFolder writes the sweep called name as a result folder of that name in a temporary
// directory, so that a report can name it, and returns its path.
func sweepFolder(t *testing.T, name string) string {
	t.Helper()
	return sweeps[name].Builder(t).WriteDir(t, filepath.Join(t.TempDir(), name))
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	t.Run("default output", func(t *testing.T) {
		dir := sweepFolder(t, "new")
		stdout, stderr, code := runCmd(t, "report", dir)
		want := "wrote " + filepath.Join(dir, "report", "index.html") + " (7 charts as PNG and SVG, fits.csv)\n"
		// The folder's server did not time its requests: the one chart left out says why.
		wantErr := "runner: report: no server_phases chart: no measured request has server-side timings"
		if code != 0 || stdout != want || !strings.HasPrefix(stderr, wantErr) || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("exit %d, stdout %q, stderr %q; want %q and %q", code, stdout, stderr, want, wantErr)
		}
		for _, name := range append(report.ChartNames(), "index", "fits") {
			if name == "server_phases" {
				continue
			}
			matches, _ := filepath.Glob(filepath.Join(dir, "report", name+".*"))
			if len(matches) == 0 {
				t.Errorf("no %s.* in %s/report", name, dir)
			}
		}
	})
	t.Run("two folders, -o after them", func(t *testing.T) {
		old, new := sweepFolder(t, "old"), sweepFolder(t, "new")
		out := filepath.Join(t.TempDir(), "cmp")
		stdout, stderr, code := runCmd(t, "report", old, new, "-o", out)
		if code != 0 || !strings.HasPrefix(stdout, "wrote "+filepath.Join(out, "index.html")) ||
			strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no server_phases chart") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		page, err := os.ReadFile(filepath.Join(out, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "old: old") || !strings.Contains(string(page), "new: new") {
			t.Errorf("the page does not name both folders")
		}
		if _, err := os.Stat(filepath.Join(new, "report")); !os.IsNotExist(err) {
			t.Errorf("-o was not honoured: the folder got a report/ (%v)", err)
		}
	})
}

func TestReportUsage(t *testing.T) {
	dir := sweepFolder(t, "new")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "want one or two result folders, got 0"},
		{[]string{"report", dir, dir, dir}, 2, "want one or two result folders, got 3"},
		{[]string{"report", t.TempDir()}, 2, "not a result folder"},
		{[]string{"report", "--help"}, 0, "Usage: runner report RESULT_DIR [NEW_DIR] [-o OUT_DIR]"},
		{[]string{"report", dir, "-x"}, 2, "flag provided but not defined: -x"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", tt.args, code, stdout+stderr, tt.code, tt.want)
		}
	}
}
