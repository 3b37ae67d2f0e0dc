package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/compare"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// diffSide describes a result folder for the diff tests: which configs (by max_tokens) it
// has, how many measured requests each, the TTFT median of each config, and its server's
// version.
type diffSide struct {
	name          string // the folder is results/diff-fixture/<name>
	maxTokens     []int
	reps          int
	ttft          map[int]float64 // median TTFT in ms by max_tokens; 40 when absent
	engineVersion string
	seed          uint64
	failed        int // how many of each config's measured requests failed
}

// writeDiffFolder writes the side as a result folder at root/results/diff-fixture/<name>, its
// values drawn from seeded lognormal distributions, and returns its path relative to root.
func writeDiffFolder(t *testing.T, root string, s diffSide) string {
	t.Helper()
	var configs []experiment.Config
	for i, mt := range s.maxTokens {
		configs = append(configs, experiment.Config{ID: fmt.Sprintf("cfg-%d", mt), ServerID: "srv0", Index: i,
			Label: fmt.Sprintf("max_tokens=%d", mt), Axes: []experiment.AxisValue{{Path: "request.max_tokens", Value: fmt.Sprint(mt)}},
			Server:  experiment.Server{Engine: "vllm", Model: "org/tiny", Dtype: "half"},
			Request: experiment.Request{API: "chat", PromptTokens: 32, MaxTokens: mt}, Repetitions: s.reps, Warmup: 1})
	}
	boot := 12.5
	b := &resultstest.Builder{
		Experiment: resultstest.Experiment("diff-fixture"),
		Configs:    configs,
		Run:        results.RunInfo{RunnerVersion: "0.1.0"},
		Servers: []results.ServerInfo{{ServerID: "srv0", Engine: "vllm", EngineVersion: s.engineVersion, Model: "org/tiny",
			Argv:      []string{"vllm", "serve", "org/tiny", "--dtype", "half", "--host", "127.0.0.1", "--port", fmt.Sprint(40000 + s.seed)},
			BootStart: resultstest.Start, BootSeconds: &boot}},
		Seed: [2]uint64{s.seed, 7},
		// A first request and the measured ones; no warm-up.
		Requests: func(experiment.Config) int { return 1 + s.reps },
		Request: func(d resultstest.Draw) record.Request {
			c, seq, ms := d.Config, d.Seq, resultstest.Ms
			median := 40.0
			if m, ok := s.ttft[c.Request.MaxTokens]; ok {
				median = m
			}
			phase := record.PhaseMeasure
			if seq == 0 {
				phase = record.PhaseFirst
			}
			n := c.Request.MaxTokens
			ttft := median * math.Exp(0.08*d.Rand.NormFloat64())
			tpot := 8 * math.Exp(0.05*d.Rand.NormFloat64())
			start := resultstest.Start.Add(time.Duration(seq) * time.Second)
			if phase == record.PhaseMeasure && seq <= s.failed {
				return record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: seq - 1,
					Start: start, Status: record.StatusFailed, HTTPStatus: 500, ErrorClass: record.ErrHTTPStatus,
					Error: "500 Internal Server Error", MaxTokens: n, Cache: "reset"}
			}
			return record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: max(seq-1, 0),
				Start: start, Status: record.StatusOK, HTTPStatus: 200,
				TTFT: ms(ttft), LastText: ms(ttft + tpot*float64(n-1)), E2E: ms(ttft + tpot*float64(n-1) + 0.4),
				TPOTEvent: ms(tpot), TPOTToken: ms(tpot), TPOTTokenExact: true, ITLMedian: ms(tpot),
				Events: n + 2, TextEvents: n, OutputTokens: record.Int(n), TokenSource: record.SourceUsageCont,
				TokensFromUsage: record.Int(n), MaxTokens: n, Cache: "reset"}
		},
	}
	rel := filepath.Join("results", "diff-fixture", s.name)
	b.WriteDir(t, filepath.Join(root, rel))
	return rel
}

// diffFixture writes a baseline and a new folder under a temporary directory and changes into
// it, so that the folders' paths in the output are the same on every run. The new folder has
// a TTFT 30% higher for max_tokens=128, lacks max_tokens=512, adds max_tokens=256, and ran on a
// newer engine.
func diffFixture(t *testing.T) (old, new string) {
	root := t.TempDir()
	old = writeDiffFolder(t, root, diffSide{name: "baseline", maxTokens: []int{64, 128, 512}, reps: 12, engineVersion: "0.6.3", seed: 1})
	new = writeDiffFolder(t, root, diffSide{name: "new", maxTokens: []int{64, 128, 256}, reps: 12, engineVersion: "0.7.0", seed: 2,
		ttft: map[int]float64{128: 52}})
	t.Chdir(root)
	return old, new
}

func TestDiffGolden(t *testing.T) {
	old, new := diffFixture(t)
	for _, format := range compare.Formats() {
		t.Run(format, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, "diff", old, new, "--format", format, "--fail-on", "ttft:+10%,tpot_token:+5%")
			if code != 1 {
				t.Errorf("exit %d, want 1 (a regression); stderr %q", code, stderr)
			}
			if want := "runner: diff: regression: max_tokens=128 ttft_ms: +"; !strings.HasPrefix(stderr, want) {
				t.Errorf("stderr %q, want it to start with %q", stderr, want)
			}
			golden := filepath.Join(diffTestdata, "diff", format+".golden")
			checkGolden(t, golden, []byte(stdout))
		})
	}
	t.Run("text --wide", func(t *testing.T) {
		stdout, _, _ := runCmd(t, "diff", old, new, "--wide", "--fail-on", "ttft:+10%,tpot_token:+5%")
		checkGolden(t, filepath.Join(diffTestdata, "diff", "text-wide.golden"), []byte(stdout))
	})
}

// diffTestdata is the package's testdata directory, found before any test changes directory.
var diffTestdata = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "testdata")
}()

// TestDiffFormatsAgree checks that the json and csv outputs carry the same rows.
func TestDiffFormatsAgree(t *testing.T) {
	old, new := diffFixture(t)
	js, _, _ := runCmd(t, "diff", old, new, "--format", "json")
	rep, err := compare.DecodeJSON(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	csvOut, _, _ := runCmd(t, "diff", old, new, "--format", "csv")
	rows, err := compare.ReadCSV(strings.NewReader(csvOut), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(rep.Rows) || len(rows) != 4*plainMetrics() {
		t.Fatalf("csv has %d rows, json %d, want %d", len(rows), len(rep.Rows), 4*plainMetrics())
	}
	for i := range rows {
		a, b := rows[i], rep.Rows[i]
		if a.ConfigID != b.ConfigID || a.Metric != b.Metric || a.Verdict != b.Verdict || a.Old.N != b.Old.N ||
			!(a.P == b.P || math.IsNaN(a.P) && math.IsNaN(b.P)) {
			t.Errorf("row %d: csv %s %s %s p=%v, json %s %s %s p=%v", i, a.ConfigID, a.Metric, a.Verdict, a.P,
				b.ConfigID, b.Metric, b.Verdict, b.P)
		}
	}
	if rep.Gate.Result != compare.GateOff {
		t.Errorf("gate %s without --fail-on, want off", rep.Gate.Result)
	}
}

func TestDiffExitStatus(t *testing.T) {
	root := t.TempDir()
	base := writeDiffFolder(t, root, diffSide{name: "baseline", maxTokens: []int{64}, reps: 10, engineVersion: "0.6.3", seed: 1})
	same := writeDiffFolder(t, root, diffSide{name: "same", maxTokens: []int{64}, reps: 10, engineVersion: "0.6.3", seed: 2})
	slow := writeDiffFolder(t, root, diffSide{name: "slow", maxTokens: []int{64}, reps: 10, engineVersion: "0.6.3", seed: 3,
		ttft: map[int]float64{64: 60}})
	smallBase := writeDiffFolder(t, root, diffSide{name: "small-baseline", maxTokens: []int{64}, reps: 3, engineVersion: "0.6.3", seed: 6})
	small := writeDiffFolder(t, root, diffSide{name: "small", maxTokens: []int{64}, reps: 3, engineVersion: "0.6.3", seed: 4,
		ttft: map[int]float64{64: 80}})
	newer := writeDiffFolder(t, root, diffSide{name: "newer", maxTokens: []int{64}, reps: 10, engineVersion: "0.7.0", seed: 5})
	dead := writeDiffFolder(t, root, diffSide{name: "dead", maxTokens: []int{64}, reps: 10, engineVersion: "0.6.3", seed: 7, failed: 10})
	flaky := writeDiffFolder(t, root, diffSide{name: "flaky", maxTokens: []int{64}, reps: 10, engineVersion: "0.6.3", seed: 8, failed: 3})
	other := writeDiffFolder(t, root, diffSide{name: "other", maxTokens: []int{128}, reps: 10, engineVersion: "0.6.3", seed: 9})
	t.Chdir(root)
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring of stdout
		stderr string // a substring of stderr
	}{
		{"no change", []string{base, same, "--fail-on", "ttft:+10%"}, 0, "Gate: pass (thresholds ttft_ms:+10%)", ""},
		{"no thresholds", []string{base, slow}, 0, "Gate: off (no thresholds)", ""},
		{"regression", []string{base, slow, "--fail-on", "ttft:+10%"}, 1, "Gate: FAIL", "regression: max_tokens=64 ttft_ms: +"},
		{"repeated flag", []string{base, slow, "--fail-on", "e2e:+50%", "--fail-on=ttft_ms:+10%"}, 1, "FAIL +10%", "ttft_ms"},
		{"within threshold", []string{base, slow, "--fail-on", "ttft:+80%"}, 0, "Gate: pass", ""},
		{"flags first", []string{"--fail-on", "ttft:+10%", "--format", "csv", base, slow}, 1, "config_id,label", ""},
		{"alpha", []string{base, slow, "--fail-on", "ttft:+10%", "--alpha", "1e-12"}, 0, "alpha 1e-12", ""},
		{"too few values", []string{smallBase, small, "--fail-on", "ttft:+10%"}, 0, "too few values to detect any change", ""},
		{"too few values, strict", []string{smallBase, small, "--fail-on", "ttft:+10%", "--strict"}, 1, "cannot be tested", ""},
		{"environment", []string{base, newer}, 0, "THE ENVIRONMENTS DIFFER", ""},
		{"dead run", []string{base, dead, "--fail-on", "ttft:+10%"}, 1, "Gate: FAIL", "max_tokens=64 (cfg-64): no ttft_ms values in the new run, which the old run has (10 measured requests failed)"},
		{"dead run, allowed missing", []string{base, dead, "--fail-on", "ttft:+10%", "--allow-missing"}, 0, "Gate: pass", ""},
		{"dead run, failed rule", []string{base, dead, "--fail-on", "failed:+50%", "--allow-missing"}, 1, "Gate: FAIL", "10 of 10 measured requests failed, was 0 of 10 (+100 points) is beyond +50%"},
		{"flaky run, failed rule", []string{base, flaky, "--fail-on", "failed:+20%"}, 1, "Gate: FAIL", "3 of 10 measured requests failed"},
		{"flaky run, failed rule within", []string{base, flaky, "--fail-on", "failed:+30%"}, 0, "Gate: pass", ""},
		{"vanished config", []string{base, other, "--fail-on", "ttft:+10%"}, 1, "Gate: FAIL", "config max_tokens=64 (cfg-64) is missing from the new run"},
		{"vanished config, allowed missing", []string{base, other, "--fail-on", "ttft:+10%", "--allow-missing"}, 0, "Gate: pass", ""},
		{"environment, strict", []string{base, newer, "--strict"}, 1, "engine_version  0.6.3  ->  0.7.0", "the environments differ: engine_version"},
		{"join by label", []string{base, same, "--join", "label", "--format", "markdown"}, 0, "Configs are joined by label.", ""},
		{"one folder", []string{base}, 2, "", "want two result folders, OLD and NEW, got 1"},
		{"three folders", []string{base, same, slow}, 2, "", "got 3"},
		{"bad alpha", []string{base, same, "--alpha", "1"}, 2, "", "--alpha 1: want a number between 0 and 1"},
		{"bad threshold", []string{base, same, "--fail-on", "ttft:10ms"}, 2, "", "--fail-on: threshold \"ttft:10ms\": the limit must be a percentage"},
		{"unknown metric", []string{base, same, "--fail-on", "latency:+5%"}, 2, "", `unknown metric "latency"`},
		{"duplicate threshold", []string{base, same, "--fail-on", "ttft:+5%", "--fail-on", "ttft_ms:+9%"}, 2, "", "two thresholds for ttft_ms"},
		{"bad format", []string{base, same, "--format", "html"}, 2, "", `unknown format "html"`},
		{"bad join", []string{base, same, "--join", "name"}, 2, "", `--join "name": want id or label`},
		{"bad flag", []string{base, same, "--fail"}, 2, "", "flag provided but not defined"},
		{"missing folder", []string{base, "results/none"}, 2, "", "results/none: no such folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, append([]string{"diff"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tt.stderr)
			}
			if tt.code == 2 && stdout != "" {
				t.Errorf("bad input printed a report:\n%s", stdout)
			}
		})
	}
}

// TestDiffFormatVersion diffs a folder whose manifest claims a format version this runner does
// not know, as a folder written by a newer runner does: bad input, exit 2, and a message that
// says which version.
func TestDiffFormatVersion(t *testing.T) {
	root := t.TempDir()
	base := writeDiffFolder(t, root, diffSide{name: "baseline", maxTokens: []int{64}, reps: 6, engineVersion: "0.6.3", seed: 1})
	future := writeDiffFolder(t, root, diffSide{name: "future", maxTokens: []int{64}, reps: 6, engineVersion: "0.6.3", seed: 2})
	resultstest.EditManifest(t, filepath.Join(root, future), func(m map[string]any) { m["schema_version"] = 2 })
	t.Chdir(root)
	for _, args := range [][]string{{base, future}, {future, base}} {
		stdout, stderr, code := runCmd(t, append([]string{"diff"}, args...)...)
		if code != 2 || stdout != "" {
			t.Errorf("diff %v: exit %d, stdout %q", args, code, stdout)
		}
		if !strings.Contains(stderr, "schema_version 2 is not supported: this runner reads version 1") {
			t.Errorf("diff %v: stderr %q", args, stderr)
		}
	}
}

func TestDiffHelp(t *testing.T) {
	stdout, stderr, code := runCmd(t, "diff", "--help")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"Usage: runner diff OLD_DIR NEW_DIR", "The gate.", "--fail-on ttft:+10%,tpot_token:+5%",
		"(p < alpha) AND", "change of exactly N% passes", "Exit status: 0", "1 when it fails", "2 on bad input", "-strict", "-alpha"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
