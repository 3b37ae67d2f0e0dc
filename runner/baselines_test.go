package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simSmokeGate is the gate CI applies when it diffs a fresh run of experiments/sim-smoke.yaml
// against results/sim-smoke/baseline. results/README.md says where its thresholds come from.
const simSmokeGate = "ttft:+25%,tpot_token:+10%,e2e:+10%,failed:+0%"

// committedBaselines returns the result folders committed under results/*/baseline.
func committedBaselines(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "results", "*", "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("committed baselines: %v, want at least sim-smoke and cpu-demo", dirs)
	}
	return dirs
}

// TestCommittedBaselinesAreRead reads every committed baseline with every command that reads
// folders, as users' CI does with theirs: a change of the folder format that would break a
// committed baseline fails here first.
func TestCommittedBaselinesAreRead(t *testing.T) {
	t.Parallel()
	for _, dir := range committedBaselines(t) {
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) {
			t.Parallel()
			for _, format := range []string{"text", "markdown", "csv", "json"} {
				stdout, stderr, code := runCmd(t, "summary", dir, "--format", format)
				if code != 0 || stdout == "" || stderr != "" {
					t.Errorf("summary --format %s: exit %d, stderr %q", format, code, stderr)
				}
			}
			stdout, stderr, code := runCmd(t, "summary", dir)
			if code != 0 || !strings.Contains(stdout, "status complete") || !strings.Contains(stdout, "(0 failed)") {
				t.Errorf("summary: exit %d, want a complete folder without failures\n%s%s", code, stdout, stderr)
			}
			stdout, stderr, code = runCmd(t, "diff", dir, dir, "--fail-on", simSmokeGate, "--strict")
			if code != 0 || !strings.Contains(stdout, "Gate: pass") {
				t.Errorf("diff of a baseline with itself: exit %d\n%s%s", code, stdout, stderr)
			}
			out := t.TempDir()
			if _, stderr, code := runCmd(t, "report", dir, "-o", filepath.Join(out, "report")); code != 0 {
				t.Errorf("report: exit %d: %s", code, stderr)
			} else if _, err := os.Stat(filepath.Join(out, "report", "index.html")); err != nil {
				t.Errorf("report: %v", err)
			}
			if _, stderr, code := runCmd(t, "export", "parquet", dir, "-o", filepath.Join(out, "parquet")); code != 0 {
				t.Errorf("export: exit %d: %s", code, stderr)
			} else if _, err := os.Stat(filepath.Join(out, "parquet", "requests.parquet")); err != nil {
				t.Errorf("export: %v", err)
			}
		})
	}
}

// TestSimSmokeGateFailsOnSlowerSimulator runs experiments/sim-smoke.yaml against a simulator
// whose decode step is 7 ms instead of 5 ms, and diffs it against the committed baseline with
// the gate CI uses: the gate must fail, on the time per output token. The configs are joined by
// label, since the slower simulator's arguments change every config id.
func TestSimSmokeGateFailsOnSlowerSimulator(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	src, err := os.ReadFile(filepath.Join("..", "experiments", "sim-smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const decode = `"--decode-per-token", "5ms"`
	if !strings.Contains(string(src), decode) {
		t.Fatalf("experiments/sim-smoke.yaml no longer sets %s", decode)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "sim-smoke.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), decode, `"--decode-per-token", "7ms"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "results")
	if code, stdout, stderr := runBinary(t, bin, file, "--results", root, "--quiet"); code != 0 {
		t.Fatalf("slower run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	slow := onlyFolder(t, root, "sim-smoke")
	stdout, stderr, code := runCmd(t, "diff", filepath.Join("..", "results", "sim-smoke", "baseline"), slow,
		"--join", "label", "--fail-on", simSmokeGate, "--format", "markdown")
	if code != 1 {
		t.Fatalf("gate on a slower simulator: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "tpot_token_ms: +") || !strings.Contains(stdout, "**Gate: FAIL**") {
		t.Errorf("the gate did not fail on tpot_token_ms:\n%s\n%s", stdout, stderr)
	}
}

// TestCIUsesTheSimSmokeGate checks that .ci/run gates with the thresholds these tests prove.
func TestCIUsesTheSimSmokeGate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), simSmokeGate) {
		t.Errorf(".ci/run does not gate with %s", simSmokeGate)
	}
}
