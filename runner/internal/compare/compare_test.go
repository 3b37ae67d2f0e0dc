package compare

import (
	"github.com/onelayerdown/runner/runner/internal/record"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// TestCompareDetectsShift writes two folders with the results writer, the new one with a TTFT
// median 25% higher, and checks that the comparison finds that shift and nothing else, and that
// the gate fails on it.
func TestCompareDetectsShift(t *testing.T) {
	root := t.TempDir()
	configs := testConfigs(20, label(0), label(1))
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}
	shifted := baseDist
	shifted.ttft *= 1.25
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2, dists: map[string]dist{label(1): shifted}}
	o, err := Read(old.write(t, filepath.Join(root, "old")))
	if err != nil {
		t.Fatal(err)
	}
	n, err := Read(nw.write(t, filepath.Join(root, "new")))
	if err != nil {
		t.Fatal(err)
	}
	rep := mustCompare(t, o, n, Options{Thresholds: mustThresholds(t, "ttft:+10%,tpot_token:+5%")})

	r := row(t, rep, label(1), "ttft_ms")
	if r.Verdict != Worse || !r.Significant || r.P >= 0.001 || r.Test != stats.MethodExact {
		t.Errorf("shifted ttft: verdict %s, p %v (%s), want worse with p < 0.001 by the exact test", r.Verdict, r.P, r.Test)
	}
	// The medians of 20 lognormal draws with σ = 0.1 are within a few percent of the truth.
	if r.ChangePct < 15 || r.ChangePct > 35 {
		t.Errorf("shifted ttft: change %+.2f%%, want about +25%%", r.ChangePct)
	}
	if r.Old.N != 20 || r.New.N != 20 || math.IsNaN(r.Old.CILow) || !(r.Old.CILow <= r.Old.Median && r.Old.Median <= r.Old.CIHigh) {
		t.Errorf("shifted ttft: samples %+v / %+v", r.Old, r.New)
	}
	if r.Gate != GateFail || r.Threshold != "+10%" {
		t.Errorf("shifted ttft: gate %q at %q, want fail at +10%%", r.Gate, r.Threshold)
	}
	if !rep.Gate.Failed() || len(rep.Gate.Reasons) != 1 || !strings.Contains(rep.Gate.Reasons[0], label(1)+" ttft_ms: +") {
		t.Errorf("gate %s, reasons %q, want one failure for %s ttft_ms", rep.Gate.Result, rep.Gate.Reasons, label(1))
	}
	// TPOT was drawn from the same distribution on both sides, and the token counts are equal.
	for _, m := range []string{"tpot_token_ms", "output_tokens"} {
		if r := row(t, rep, label(1), m); r.Verdict != Same || r.Significant {
			t.Errorf("%s: verdict %s (p=%v), want ~", m, r.Verdict, r.P)
		}
	}
	if r := row(t, rep, label(1), "tpot_token_ms"); r.Gate != GateOK {
		t.Errorf("tpot_token_ms: gate %q, want ok", r.Gate)
	}
	if len(rep.Warnings) != 0 || len(DifferingEnv(rep.Env)) != 0 {
		t.Errorf("warnings %q, env differences %q, want none", rep.Warnings, DifferingEnv(rep.Env))
	}
	if rep.Old.Measured != 40 || rep.Old.Configs != 2 || rep.New.Failed != 0 {
		t.Errorf("folder info %+v", rep.New)
	}
}

// TestCompareNullShift compares sides drawn from one distribution over many seeded trials: the
// rate at which a metric is called significant must be near alpha, and a +0% gate on it, which
// fails only on a significant increase, must fail in about alpha/2 of the trials. The bounds
// are about four binomial standard deviations wide (√(0.05·0.95/1000) ≈ 0.007), with room
// below for the discreteness of the exact test (0.043 for 10 and 10 values).
func TestCompareNullShift(t *testing.T) {
	const trials = 1000
	configs := testConfigs(10, label(0))
	spread := baseDist
	spread.spread = 0.3
	dists := map[string]dist{label(0): spread}
	var significant, failed, same int
	for i := 0; i < trials; i++ {
		old := sideSpec{configs: configs, env: baseEnv, seed: uint64(2 * i), dists: dists}.memory()
		nw := sideSpec{configs: configs, env: baseEnv, seed: uint64(2*i + 1), dists: dists}.memory()
		rep := mustCompare(t, old, nw, Options{Thresholds: []Threshold{{Metric: "ttft_ms", Direction: Up}}})
		r := row(t, rep, label(0), "ttft_ms")
		if r.Significant {
			significant++
		}
		if r.Verdict == Same {
			same++
		}
		if rep.Gate.Failed() {
			failed++
		}
	}
	rate, failRate := float64(significant)/trials, float64(failed)/trials
	t.Logf("significant in %.3f of %d null trials; gate failed in %.3f", rate, trials, failRate)
	if rate < 0.02 || rate > 0.08 {
		t.Errorf("false-positive rate %.3f, want near 0.05", rate)
	}
	if failRate < 0.005 || failRate > 0.05 {
		t.Errorf("gate failed in %.3f of null trials, want near 0.025", failRate)
	}
	if same != trials-significant {
		t.Errorf("%d rows are ~ and %d significant, of %d", same, significant, trials)
	}
}

func TestCompareConfigsOnOneSide(t *testing.T) {
	old := sideSpec{configs: testConfigs(8, "a", "b"), env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: testConfigs(8, "b", "c"), env: baseEnv, seed: 2}.memory()
	rep := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "ttft:+10%")})
	if len(rep.OnlyOld) != 1 || rep.OnlyOld[0] != (ConfigRef{ID: "id-a", Label: "a"}) {
		t.Errorf("OnlyOld = %+v", rep.OnlyOld)
	}
	if len(rep.OnlyNew) != 1 || rep.OnlyNew[0] != (ConfigRef{ID: "id-c", Label: "c"}) {
		t.Errorf("OnlyNew = %+v", rep.OnlyNew)
	}
	nm := 0 // the metrics of configs without load or server timings
	for _, m := range results.Metrics() {
		if !m.LoadOnly() && !m.PresentOnly() {
			nm++
		}
	}
	if len(rep.Rows) != 3*nm {
		t.Fatalf("%d rows, want %d", len(rep.Rows), 3*nm)
	}
	// Rows: a (old only), b (both), in the old folder's order, then c (new only).
	for i, want := range []struct {
		label    string
		presence Presence
	}{{"a", OldOnly}, {"b", Both}, {"c", NewOnly}} {
		r := rep.Rows[i*nm]
		if r.Label != want.label || r.Presence != want.presence {
			t.Errorf("row %d: %s %s, want %s %s", i*nm, r.Label, r.Presence, want.label, want.presence)
		}
		if want.presence != Both && (r.Verdict != Untested || !math.IsNaN(r.P)) {
			t.Errorf("one-sided row %s: verdict %s, p %v", r.Label, r.Verdict, r.P)
		}
	}
	// A config the new run lost fails a gate on its metrics; one it gained cannot.
	if r := row(t, rep, "a", "ttft_ms"); r.Old.N != 8 || r.New.N != 0 || !math.IsNaN(r.New.Median) || r.Gate != GateMissing {
		t.Errorf("old-only row: gate %q, samples %+v / %+v", r.Gate, r.Old, r.New)
	}
	if r := row(t, rep, "a", "e2e_ms"); r.Gate != GateNone {
		t.Errorf("old-only row of an ungated metric: gate %q", r.Gate)
	}
	if r := row(t, rep, "c", "ttft_ms"); r.Gate != GateNone {
		t.Errorf("new-only row: gate %q", r.Gate)
	}
	if !rep.Gate.Failed() || len(rep.Gate.Reasons) != 1 ||
		rep.Gate.Reasons[0] != "config a (id-a) is missing from the new run" {
		t.Errorf("gate %s %q, want a fail for config a only", rep.Gate.Result, rep.Gate.Reasons)
	}
	// A gate on failed requests alone fails on the lost config too.
	failedOnly := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "failed:+10%")})
	if !failedOnly.Gate.Failed() || len(failedOnly.Gate.Reasons) != 1 || failedOnly.Gate.Reasons[0] != "config a (id-a) is missing from the new run" {
		t.Errorf("failed-only gate %s %q, want a fail for config a", failedOnly.Gate.Result, failedOnly.Gate.Reasons)
	}
	allow := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "ttft:+10%"), AllowMissing: true})
	if allow.Gate.Result != GatePassed {
		t.Errorf("gate %s %q with AllowMissing, want pass", allow.Gate.Result, allow.Gate.Reasons)
	}
	strict := mustCompare(t, old, nw, Options{Strict: true})
	if !strict.Gate.Failed() || len(strict.Gate.Reasons) != 2 ||
		!strings.Contains(strict.Gate.Reasons[0], "config a (id-a) is only in the old folder") ||
		!strings.Contains(strict.Gate.Reasons[1], "config c (id-c) is only in the new folder") {
		t.Errorf("strict gate %s: %q", strict.Gate.Result, strict.Gate.Reasons)
	}
}

// TestCompareJoinByLabel changes every config id, as a change to the server's arguments does:
// joined by id nothing matches, joined by label everything does.
func TestCompareJoinByLabel(t *testing.T) {
	configs := testConfigs(8, "a", "b")
	renamed := testConfigs(8, "a", "b")
	for i := range renamed {
		renamed[i].ID += "-v2"
	}
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: renamed, env: baseEnv, seed: 2}.memory()
	byID := mustCompare(t, old, nw, Options{})
	if len(byID.OnlyOld) != 2 || len(byID.OnlyNew) != 2 || !hasWarning(byID.Warnings, "join by label") {
		t.Errorf("by id: only old %v, only new %v, warnings %q", byID.OnlyOld, byID.OnlyNew, byID.Warnings)
	}
	byLabel := mustCompare(t, old, nw, Options{JoinBy: ByLabel})
	if len(byLabel.OnlyOld)+len(byLabel.OnlyNew) != 0 || row(t, byLabel, "b", "ttft_ms").Presence != Both {
		t.Errorf("by label: only old %v, only new %v", byLabel.OnlyOld, byLabel.OnlyNew)
	}
	dup := testConfigs(8, "a", "a")
	dup[1].ID = "id-a2"
	if _, err := Compare(sideSpec{configs: dup, env: baseEnv}.memory(), nw, Options{JoinBy: ByLabel}); err == nil ||
		!strings.Contains(err.Error(), `same label "a"`) {
		t.Errorf("duplicate labels joined by label: %v", err)
	}
}

func TestCompareEnvironment(t *testing.T) {
	configs := testConfigs(8, "a")
	tests := []struct {
		name    string
		change  func(*env)
		differs []string // fields that matter and differ
		info    []string // fields that differ for information only
	}{
		{"same", func(*env) {}, nil, nil},
		{"another port and executable directory", func(e *env) {
			e.argv = append([]string{"/opt/venv/bin/vllm"}, e.argv[1:]...)
			e.argv[len(e.argv)-1] = "50011"
		}, nil, nil},
		{"engine version", func(e *env) { e.engineVersion = "0.7.0" }, []string{"engine_version"}, nil},
		{"server argument", func(e *env) { e.argv = append(e.argv, "--enforce-eager") }, []string{"server_command"}, nil},
		{"GPU", func(e *env) { e.gpu = "NVIDIA L4" }, []string{"gpu"}, nil},
		{"no GPU", func(e *env) { e.gpu = "" }, []string{"gpu", "gpu_driver"}, nil},
		{"runner version", func(e *env) { e.runner = "0.2.0" }, nil, []string{"runner_version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := baseEnv
			e.argv = append([]string(nil), baseEnv.argv...)
			tt.change(&e)
			rep := mustCompare(t, sideSpec{configs: configs, env: baseEnv, seed: 1}.memory(),
				sideSpec{configs: configs, env: e, seed: 2}.memory(), Options{})
			if got := DifferingEnv(rep.Env); strings.Join(got, ",") != strings.Join(tt.differs, ",") {
				t.Errorf("differing fields %q, want %q", got, tt.differs)
			}
			var info []string
			for _, f := range rep.Env {
				if !f.Matters && f.Differs() {
					info = append(info, f.Name)
				}
			}
			if strings.Join(info, ",") != strings.Join(tt.info, ",") {
				t.Errorf("informational differences %q, want %q", info, tt.info)
			}
			if loud := hasWarning(rep.Warnings, "the environments differ"); loud != (len(tt.differs) > 0) {
				t.Errorf("warnings %q", rep.Warnings)
			}
			strict := mustCompare(t, sideSpec{configs: configs, env: baseEnv, seed: 1}.memory(),
				sideSpec{configs: configs, env: e, seed: 2}.memory(), Options{Strict: true})
			if strict.Gate.Failed() != (len(tt.differs) > 0) {
				t.Errorf("strict gate %s: %q", strict.Gate.Result, strict.Gate.Reasons)
			}
		})
	}
	// The fields and their order are part of the json format.
	var names []string
	for _, f := range Fingerprints(sideSpec{configs: configs, env: baseEnv}.manifest(), sideSpec{configs: configs, env: baseEnv}.manifest()) {
		names = append(names, f.Name)
	}
	want := "format_version,engine,engine_version,model,dtype,gpu,gpu_driver,server_command,cpu,runner_version,experiment"
	if strings.Join(names, ",") != want {
		t.Errorf("fields %s, want %s", strings.Join(names, ","), want)
	}
	f := Fingerprints(sideSpec{configs: configs, env: baseEnv}.manifest(), sideSpec{configs: configs, env: baseEnv}.manifest())
	if f[7].Old != "vllm serve org/tiny --dtype half --host 127.0.0.1 --port {port}" {
		t.Errorf("server_command %q", f[7].Old)
	}
}

// TestCompareFormatVersion checks that a folder of another format version is refused with a
// message that says so, as a folder written by a newer runner would be.
func TestCompareFormatVersion(t *testing.T) {
	dir := sideSpec{configs: testConfigs(6, "a"), env: baseEnv, seed: 1}.write(t, t.TempDir())
	resultstest.EditManifest(t, dir, func(m map[string]any) { m["schema_version"] = 2 })
	_, err := Read(dir)
	if err == nil || !strings.Contains(err.Error(), "schema_version 2 is not supported") {
		t.Errorf("Load of a version 2 folder: %v", err)
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a result folder") {
		t.Errorf("Load of an empty directory: %v", err)
	}
}

// TestCompareTooFewValues: with 3 values a side no change can reach 0.05, however large.
func TestCompareTooFewValues(t *testing.T) {
	configs := testConfigs(3, "a")
	doubled := baseDist
	doubled.ttft *= 2
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2, dists: map[string]dist{"a": doubled}}.memory()
	rep := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "ttft:+10%")})
	r := row(t, rep, "a", "ttft_ms")
	if r.Verdict != Same || r.P != 0.1 || r.MinP != 0.1 || r.Gate != GateUntestable {
		t.Errorf("3+3 values: verdict %s, p %v, min p %v, gate %q", r.Verdict, r.P, r.MinP, r.Gate)
	}
	if !hasWarning(r.Warnings, "n=3+3: too few values to detect any change at alpha 0.05 (the smallest possible p-value is 0.1, need at least 4 a side)") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if !hasWarning(r.Warnings, "n=3: too few old values for a 95% interval of the median (need 6)") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if rep.Gate.Failed() {
		t.Errorf("gate failed without --strict: %q", rep.Gate.Reasons)
	}
	strict := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "ttft:+10%"), Strict: true})
	if !strict.Gate.Failed() || !hasWarning(strict.Gate.Reasons, "a ttft_ms: cannot be tested (n=3+3)") {
		t.Errorf("strict gate %s: %q", strict.Gate.Result, strict.Gate.Reasons)
	}
}

// TestCompareFailedRequests: a new run whose requests all failed has no values to compare.
func TestCompareFailedRequests(t *testing.T) {
	configs := testConfigs(8, "a")
	broken := baseDist
	broken.fail = 8
	rep := mustCompare(t, sideSpec{configs: configs, env: baseEnv, seed: 1}.memory(),
		sideSpec{configs: configs, env: baseEnv, seed: 2, dists: map[string]dist{"a": broken}}.memory(),
		Options{Thresholds: mustThresholds(t, "ttft:+10%")})
	r := row(t, rep, "a", "ttft_ms")
	if r.New.N != 0 || r.New.Failed != 8 || r.Verdict != Untested || r.Gate != GateMissing {
		t.Errorf("row %+v", r)
	}
	if !hasWarning(r.Warnings, "failed requests: old 0, new 8") || !hasWarning(r.Warnings, "no values on the new side") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if rep.New.Failed != 8 || rep.New.Measured != 8 {
		t.Errorf("new folder %+v", rep.New)
	}
	// A dead run never passes a gate.
	if !rep.Gate.Failed() || len(rep.Gate.Reasons) != 1 ||
		rep.Gate.Reasons[0] != "a (id-a): no ttft_ms values in the new run, which the old run has (8 measured requests failed)" {
		t.Errorf("gate %s %q, want a fail", rep.Gate.Result, rep.Gate.Reasons)
	}
}

// TestCompareFailedRule checks the gate's rule on the share of failed requests, in
// percentage points, and that AllowMissing lets a dead run pass only the other rules.
func TestCompareFailedRule(t *testing.T) {
	configs := testConfigs(10, "a")
	side := func(seed uint64, fail int) *Side {
		d := baseDist
		d.fail = fail
		return sideSpec{configs: configs, env: baseEnv, seed: seed, dists: map[string]dist{"a": d}}.memory()
	}
	tests := []struct {
		name          string
		oldF, newF    int
		rules         string
		allowMissing  bool
		fail          bool
		reasonContain string
	}{
		{"no change", 1, 1, "failed:+0%", false, false, ""},
		{"one more failure within 10 points", 1, 2, "failed:+10%", false, false, ""},
		{"two more failures beyond 10 points", 1, 3, "failed:+10%", false, true, "a failed: 3 of 10 measured requests failed, was 1 of 10 (+20 points) is beyond +10%"},
		{"fewer failures", 3, 0, "failed:+0%", false, false, ""},
		{"fewer failures, either way", 3, 0, "failed:±10%", false, true, "(-30 points) is beyond ±10%"},
		{"all failed, metric gate allowed missing", 0, 10, "ttft:+10%,failed:+50%", true, true, "10 of 10 measured requests failed"},
		{"all failed, only the metric gate, allowed missing", 0, 10, "ttft:+10%", true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := mustCompare(t, side(1, tt.oldF), side(2, tt.newF), Options{Thresholds: mustThresholds(t, tt.rules), AllowMissing: tt.allowMissing})
			if rep.Gate.Failed() != tt.fail {
				t.Fatalf("gate %s %q, want failed=%v", rep.Gate.Result, rep.Gate.Reasons, tt.fail)
			}
			if tt.fail && !hasWarning(rep.Gate.Reasons, tt.reasonContain) {
				t.Errorf("reasons %q, want one containing %q", rep.Gate.Reasons, tt.reasonContain)
			}
		})
	}
}

// TestCompareTokenCounts: a significant change of output_tokens is called a different
// experiment; it fails only a strict gate or an explicit rule.
func TestCompareTokenCounts(t *testing.T) {
	configs := testConfigs(10, "a")
	halved := baseDist
	halved.tokens = 32
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2, dists: map[string]dist{"a": halved}}.memory()
	rep := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "ttft:+10%")})
	r := row(t, rep, "a", "output_tokens")
	// Every value ties within its side: the normal approximation, as R gives (p = 1.59e-05).
	if r.Verdict != Changed || r.ChangePct != -50 || r.Test != stats.MethodNormal || math.Abs(r.P-1.5937911688066268e-05) > 1e-15 {
		t.Errorf("output_tokens: verdict %s, change %v, p %v (%s)", r.Verdict, r.ChangePct, r.P, r.Test)
	}
	if !hasWarning(r.Warnings, "output_tokens changed significantly (-50.00%): the requests generate different lengths") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if rep.Gate.Failed() {
		t.Errorf("gate failed on a token count without a rule for it: %q", rep.Gate.Reasons)
	}
	if g := mustCompare(t, old, nw, Options{Strict: true}).Gate; !g.Failed() || !hasWarning(g.Reasons, "a output_tokens: changed significantly (-50.00%)") {
		t.Errorf("strict gate %s: %q", g.Result, g.Reasons)
	}
	if g := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "output_tokens:±5%")}).Gate; !g.Failed() {
		t.Errorf("output_tokens:±5%% gate %s", g.Result)
	}
	if g := mustCompare(t, old, nw, Options{Thresholds: mustThresholds(t, "output_tokens:+5%")}).Gate; g.Failed() {
		t.Errorf("output_tokens:+5%% gate failed on a decrease: %q", g.Reasons)
	}
}

func TestCompareOptions(t *testing.T) {
	s := sideSpec{configs: testConfigs(6, "a"), env: baseEnv}.memory()
	for _, tt := range []struct {
		name string
		opt  Options
		want string
	}{
		{"alpha 1", Options{Alpha: 1}, "alpha 1 is not between 0 and 1"},
		{"alpha negative", Options{Alpha: -0.1}, "alpha -0.1"},
		{"join", Options{JoinBy: "name"}, `cannot join configs by "name"`},
		{"unknown metric", Options{Thresholds: []Threshold{{Metric: "ttft"}}}, "ttft is not a metric name"},
		{"duplicate", Options{Thresholds: []Threshold{{Metric: "e2e_ms"}, {Metric: "e2e_ms", Direction: Down}}}, "two thresholds for e2e_ms"},
		{"negative percent", Options{Thresholds: []Threshold{{Metric: "e2e_ms", Percent: -1}}}, "finite number ≥ 0"},
	} {
		if _, err := Compare(s, s, tt.opt); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	rep := mustCompare(t, s, s, Options{})
	if rep.Alpha != DefaultAlpha || rep.JoinBy != ByID || rep.Gate.Result != GateOff {
		t.Errorf("defaults: alpha %v, join %s, gate %s", rep.Alpha, rep.JoinBy, rep.Gate.Result)
	}
	if r := row(t, rep, "a", "ttft_ms"); r.P != 1 || r.ChangePct != 0 || r.Verdict != Same {
		t.Errorf("a folder against itself: p %v, change %v, verdict %s", r.P, r.ChangePct, r.Verdict)
	}
}

func TestCompareFolderStatus(t *testing.T) {
	configs := testConfigs(6, "a")
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2}.memory()
	nw.Status = results.StatusInterrupted
	nw.Notes = []string{"requests.csv:9: skipped a torn last line (the writer stopped mid-write)"}
	rep := mustCompare(t, old, nw, Options{})
	if !hasWarning(rep.Warnings, "the new folder is interrupted, not complete") ||
		!hasWarning(rep.Warnings, "new folder: requests.csv:9: skipped a torn last line") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if rep.New.Status != results.StatusInterrupted {
		t.Errorf("new status %s", rep.New.Status)
	}
}

func BenchmarkCompare(b *testing.B) {
	labels := []string{"16", "32", "64", "128", "256", "512", "768", "896"}
	configs := testConfigs(30, labels...)
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2}.memory()
	ts := []Threshold{{Metric: "ttft_ms", Direction: Up, Percent: 10}}
	for b.Loop() {
		if _, err := Compare(old, nw, Options{Thresholds: ts}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStrictRefusesCacheHitAfterReset: a folder whose measured requests hit the prefix cache
// after a reset fails a strict gate, one reason per config, and leaves a plain diff alone.
func TestStrictRefusesCacheHitAfterReset(t *testing.T) {
	configs := testConfigs(8, "a", "b")
	old := sideSpec{configs: configs, env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: configs, env: baseEnv, seed: 2}.memory()
	flagged := 0
	for i := range nw.Requests {
		r := &nw.Requests[i]
		if r.ConfigID == "id-b" && r.Phase == record.PhaseMeasure && r.Rep < 3 {
			r.CacheReset, r.PrefixCacheHits, r.CacheHitAfterReset = true, record.Int(16), true
			flagged++
		}
	}
	if flagged != 3 {
		t.Fatalf("flagged %d requests, want 3", flagged)
	}
	tests := []struct {
		name   string
		opt    Options
		failed bool
	}{
		{"plain", Options{}, false},
		{"strict", Options{Strict: true}, true},
	}
	for _, tt := range tests {
		g := mustCompare(t, old, nw, tt.opt).Gate
		want := "config id-b in the new folder: 3 measured requests hit the prefix cache after it was reset, so the reset did not take"
		if g.Failed() != tt.failed || tt.failed && (len(g.Reasons) != 1 || g.Reasons[0] != want) {
			t.Errorf("%s: gate %s %q", tt.name, g.Result, g.Reasons)
		}
	}
}

// TestCompareServerTimingsPresentOnly: server_ttft_ms and client_overhead_ms are compared
// where one side has them, and left out where neither has, as summaries leave them out.
func TestCompareServerTimingsPresentOnly(t *testing.T) {
	old := sideSpec{configs: testConfigs(8, "a", "b"), env: baseEnv, seed: 1}.memory()
	nw := sideSpec{configs: testConfigs(8, "a", "b"), env: baseEnv, seed: 2}.memory()
	for i := range nw.Requests {
		r := &nw.Requests[i]
		if r.ConfigID == old.Manifest.Configs[1].ID && r.TTFT != nil {
			server := *r.TTFT - time.Millisecond
			r.ServerTTFT, r.ClientOverhead = &server, record.Dur(time.Millisecond)
		}
	}
	rep := mustCompare(t, old, nw, Options{})
	for _, r := range rep.Rows {
		if (r.Metric == "server_ttft_ms" || r.Metric == "client_overhead_ms") && r.Label != "b" {
			t.Errorf("config %s, which has no server timings on either side, has a %s row", r.Label, r.Metric)
		}
	}
	for _, m := range []string{"server_ttft_ms", "client_overhead_ms"} {
		if got := row(t, rep, "b", m); got.Old.N != 0 || got.New.N != 8 || !slices.Contains(got.Warnings, "no values on the old side: not compared") {
			t.Errorf("b %s: old n %d, new n %d, warnings %q", m, got.Old.N, got.New.N, got.Warnings)
		}
	}
}
