package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/compare"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/plan"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// clearShardEnv empties the variables --shard auto reads, which a test machine (a CI job in a
// Kubernetes pod or a Slurm array) may itself set.
func clearShardEnv(t *testing.T) {
	for _, name := range []string{plan.EnvJobIndex, plan.EnvShards, plan.EnvSlurmIndex, plan.EnvSlurmMin, plan.EnvSlurmCount} {
		t.Setenv(name, "")
	}
}

// endpointExperiment is an experiment of two server configs on endpoints that nothing answers:
// a run of it that gets past its checks fails, so the checks can be tested without a server.
const endpointExperiment = `
version: 1
name: shard-usage
server:
  engine: endpoint
  url: http://127.0.0.1:9
request:
  api: completions
  prompt_tokens: 8
matrix:
  server.model: [m1, m2]
  request.max_tokens: [4, 8]
repetitions: 2
`

func TestRunShardUsage(t *testing.T) {
	dir := t.TempDir()
	file := writeExperiment(t, dir, "shard-usage", endpointExperiment)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"index past the end", []string{"--shard", "3/3"}, nil, `runner: run: --shard "3/3": shard index 3 is out of range: the shards of 3 are numbered 0 to 2`},
		{"no shards", []string{"--shard", "0/0"}, nil, `--shard "0/0": the shard count "0" is not a whole number of at least 1`},
		{"not a shard", []string{"--shard", "x"}, nil, `--shard "x": want I/N (shard I of N, from 0), auto/N or auto`},
		{"auto without an index", []string{"--shard", "auto/3"}, nil, "--shard auto/3: no shard index in the environment: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (a Slurm job array) is set"},
		{"auto without a count", []string{"--shard", "auto"}, map[string]string{"JOB_COMPLETION_INDEX": "0"}, "--shard auto: no shard count: set RUNNER_SHARDS"},
		{"index from Kubernetes out of range", []string{"--shard", "auto/3"}, map[string]string{"JOB_COMPLETION_INDEX": "3"}, "shard index 3 (JOB_COMPLETION_INDEX=3) is out of range"},
		{"index from Slurm out of range", []string{"--shard", "auto"}, map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"},
			"shard index 3 (SLURM_ARRAY_TASK_ID=4 minus SLURM_ARRAY_TASK_MIN=1) is out of range: the shards of 3 are numbered 0 to 2"},
		{"more shards than the bound", []string{"--shard", "0/20000", "--dry-run"}, nil, `runner: run: --shard "0/20000": the shard count "20000" is more than 10000, the most a plan may be split into`},
		{"a billion shards", []string{"--shard", "0/1000000000", "--dry-run"}, nil, `the shard count "1000000000" is more than 10000`},
		{"more shards than the bound from the environment", []string{"--shard", "auto", "--dry-run"}, map[string]string{"JOB_COMPLETION_INDEX": "0", "RUNNER_SHARDS": "20000"}, `--shard auto: the shard count RUNNER_SHARDS="20000" is more than 10000`},
		{"empty", []string{"--shard", "", "--dry-run"}, nil, `runner: run: --shard "" is empty: want I/N (shard I of N, from 0), auto/N or auto`},
		{"empty after =", []string{"--shard=", "--dry-run"}, nil, `--shard "" is empty`},
		{"a sign", []string{"--shard", "+1/3", "--dry-run"}, nil, `--shard "+1/3": the shard index "+1" is not a whole number written in decimal digits alone`},
		{"leading zeros", []string{"--shard", "01/03", "--dry-run"}, nil, `--shard "01/03": the shard count "03" is not a whole number written in decimal digits alone`},
		{"a space in the flag", []string{"--shard", " 1/3", "--dry-run"}, nil, `--shard " 1/3": the shard index " 1" is not a whole number written in decimal digits alone`},
		{"a space in the environment", []string{"--shard", "auto/3", "--dry-run"}, map[string]string{"JOB_COMPLETION_INDEX": " 1"}, `--shard auto/3: the shard index JOB_COMPLETION_INDEX=" 1" is not a whole number written in decimal digits alone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearShardEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			root := filepath.Join(t.TempDir(), "results")
			stdout, stderr, code := runCmd(t, append([]string{file, "--results", root}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("a refused shard wrote %s", root)
			}
		})
	}

	// A dry run of one shard plans that shard's configs only.
	clearShardEnv(t)
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	stdout, stderr, code := runCmd(t, file, "--shard", "auto/2", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "\n2 configs, 0 server boots, 7 requests") ||
		!strings.Contains(stderr, "shard 1 of 2 (index from JOB_COMPLETION_INDEX): 2 configs of 4, 7 requests") {
		t.Errorf("dry run of shard 1/2: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestRunShardResumeMismatch resumes a shard's folder with another --shard, and folders of a
// shard and of the whole plan each the other way: every one is refused, naming the flag to give.
func TestRunShardResumeMismatch(t *testing.T) {
	clearShardEnv(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "shard-usage", endpointExperiment)
	exp, err := experiment.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// folder writes an interrupted folder of cfgs as the shard (nil: the whole plan) and returns it.
	folder := func(shard *results.Shard, cfgs []experiment.Config) string {
		f, err := results.Create(filepath.Join(dir, "results"), exp, cfgs, results.RunInfo{Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(results.StatusInterrupted); err != nil {
			t.Fatal(err)
		}
		return f.Dir()
	}
	shard0 := folder(&results.Shard{Index: 0, Count: 2, Fingerprint: plan.Fingerprint(results.SHA256(exp.Source), 2)}, plan.Shards(cfgs, 2)[0])
	whole := folder(nil, cfgs)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"another index", []string{"--resume", shard0, "--shard", "1/2"},
			"runner: run: resume " + shard0 + ": the folder is shard 0 of 2, but --shard names shard 1 of 2 (index from flag): resume it with --shard 0/2"},
		{"another count", []string{"--resume", shard0, "--shard", "0/3"}, "the folder is shard 0 of 2, but --shard names shard 0 of 3"},
		{"no shard given", []string{"--resume", shard0}, "the folder is shard 0 of 2: resume it with --shard 0/2"},
		{"a shard of the whole plan", []string{"--resume", whole, "--shard", "0/2"}, "the folder holds the whole plan, not a shard: resume it without --shard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCmd(t, append([]string{file}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestPlanShards(t *testing.T) {
	in := filepath.Join("testdata", "plan", "sweep.yaml")
	for _, format := range plan.Formats() {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := runCmd(t, "plan", in, "--shards", "2", "--format", format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			ext := map[string]string{"text": ".txt", "json": ".json", "csv": ".csv"}[format]
			checkGolden(t, filepath.Join("testdata", "plan", "sweep.shards-2"+ext), []byte(out))
		})
	}
}

// shardProcess is one shard of a run, as a scheduler starts it: its arguments and environment.
type shardProcess struct {
	args []string
	env  []string
}

// runShards starts every shard's process at once, as a scheduler would, and waits for them all.
// It fails the test when one does not exit 0.
func runShards(t *testing.T, bin string, shards []shardProcess) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
		err            error
	}
	out := make([]result, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, s.args...)
			cmd.Env = append(os.Environ(), s.env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				out[i].code, err = ee.ExitCode(), nil
			}
			out[i] = result{out[i].code, stdout.String(), stderr.String(), err}
		}()
	}
	wg.Wait()
	for i, r := range out {
		if r.err != nil || r.code != 0 {
			t.Fatalf("shard process %d (%v %v): exit %d %v\nstdout:\n%s\nstderr:\n%s", i, shards[i].env, shards[i].args, r.code, r.err, r.stdout, r.stderr)
		}
	}
}

// shardExperiment is a small experiment on the simulator: three server configs (three
// max_model_len values, each one boot) of two configs each, whose latency model (queueing,
// per-token prefill and decode) the simulator follows exactly.
func shardExperiment(marker string) string {
	return fmt.Sprintf(`
version: 1
name: fleet
server:
  engine: sim
  model: %s
  args: ["--queue-delay", "3ms", "--prefill-per-token", "100us", "--decode-per-token", "2ms", "--seed", "5"]
request:
  api: completions
  ignore_eos: true
  prompt_tokens: 32
matrix:
  server.max_model_len: [256, 512, 1024]
  request.max_tokens: [8, 24]
warmup: 1
repetitions: 5
cache: reset
`, marker)
}

// TestShardsThenMerge runs an experiment on one machine, then as shards started at once as a
// Kubernetes Indexed Job and a Slurm job array start them, and merges each set of shard folders:
// the merged folder holds every planned request exactly once, the configs of the single run, and
// reads as the single run does to runner diff.
func TestShardsThenMerge(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("fleet-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "fleet", shardExperiment(marker))
	exp, err := experiment.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(dir, "single")
	if code, stdout, stderr := runBinary(t, bin, file, "--results", single, "--quiet"); code != 0 {
		t.Fatalf("single run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	singleDir := onlyFolder(t, single, "fleet")

	tests := []struct {
		name   string
		n      int
		shards func(root string) []shardProcess
	}{
		{"kubernetes indexed job", 3, func(root string) []shardProcess {
			var ps []shardProcess
			for i := range 3 {
				ps = append(ps, shardProcess{
					args: []string{file, "--shard", "auto/3", "--results", root, "--quiet"},
					env:  []string{"JOB_COMPLETION_INDEX=" + fmt.Sprint(i), "SLURM_ARRAY_TASK_ID=", "RUNNER_SHARDS=", "SLURM_ARRAY_TASK_COUNT="},
				})
			}
			return ps
		}},
		// An array of 4 tasks numbered from 1 (sbatch --array=1-4) for 3 server configs: one
		// shard runs nothing and writes an empty folder, which merges like the others.
		{"slurm job array", 4, func(root string) []shardProcess {
			var ps []shardProcess
			for i := 1; i <= 4; i++ {
				ps = append(ps, shardProcess{
					args: []string{file, "--shard", "auto", "--results", root, "--quiet"},
					env: []string{"SLURM_ARRAY_TASK_ID=" + fmt.Sprint(i), "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=4",
						"JOB_COMPLETION_INDEX=", "RUNNER_SHARDS="},
				})
			}
			return ps
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			runShards(t, bin, tt.shards(root))
			checkNoSurvivors(t, marker)
			shardDirs, err := filepath.Glob(filepath.Join(root, "fleet", "*-shard-*"))
			if err != nil || len(shardDirs) != tt.n {
				t.Fatalf("shard folders %v (%v), want %d", shardDirs, err, tt.n)
			}
			for _, d := range shardDirs {
				man, err := results.ReadManifest(d)
				if err != nil {
					t.Fatal(err)
				}
				if s := man.Shard; man.Status != results.StatusComplete || s == nil || s.Count != tt.n ||
					!strings.HasSuffix(d, fmt.Sprintf("-shard-%d-of-%d", s.Index, s.Count)) ||
					s.Fingerprint != plan.Fingerprint(results.SHA256(exp.Source), tt.n) || s.Host == "" {
					t.Errorf("%s: status %s, shard %+v", d, man.Status, man.Shard)
				}
			}

			merged := filepath.Join(root, "merged")
			if code, stdout, stderr := runBinary(t, bin, append([]string{"merge", "-o", merged}, shardDirs...)...); code != 0 {
				t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
			}
			// Every planned request exactly once: the requests of the single run, by id.
			reqs := readRequests(t, merged)
			if len(reqs) != experiment.Requests(cfgs) {
				t.Errorf("merged folder has %d requests, the plan %d", len(reqs), experiment.Requests(cfgs))
			}
			if got, want := requestIDs(t, reqs), requestIDs(t, readRequests(t, singleDir)); !reflect.DeepEqual(got, want) {
				t.Errorf("merged request ids %v, the single run's %v", got, want)
			}
			// The configs, and their ids, of the single run.
			sm, err := results.ReadManifest(singleDir)
			if err != nil {
				t.Fatal(err)
			}
			mm, err := results.ReadManifest(merged)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := configIDs(mm.Configs), configIDs(sm.Configs); !reflect.DeepEqual(got, want) {
				t.Errorf("merged configs %v, the single run's %v", got, want)
			}
			for _, f := range []string{results.ConfigsFile} {
				a, _ := os.ReadFile(filepath.Join(singleDir, f))
				b, _ := os.ReadFile(filepath.Join(merged, f))
				if string(a) != string(b) {
					t.Errorf("%s differs between the single run and the merged one:\n%s\n---\n%s", f, a, b)
				}
			}
			if mm.Status != results.StatusComplete || mm.Merged == nil || mm.Merged.Count != tt.n || len(mm.Merged.Shards) != tt.n {
				t.Errorf("merged manifest: status %s, merged %+v", mm.Status, mm.Merged)
			}
			// The simulator's latency model is deterministic: no significant change, far inside
			// a generous gate (the shards ran at once on shared cores, the single run alone).
			code, stdout, stderr := runBinary(t, bin, "diff", singleDir, merged, "--format", "json",
				"--fail-on", "ttft:+300%,tpot_token:+300%,e2e:+300%,failed:+1%")
			if code != 0 {
				t.Fatalf("diff single merged: exit %d\n%s\n%s", code, stdout, stderr)
			}
			rep, err := compare.DecodeJSON(strings.NewReader(stdout))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.OnlyOld)+len(rep.OnlyNew) > 0 || rep.Gate.Result != compare.GatePassed {
				t.Errorf("diff: configs only in single %v, only in merged %v, gate %s %v", rep.OnlyOld, rep.OnlyNew, rep.Gate.Result, rep.Gate.Reasons)
			}
			compared := map[string]bool{}
			for _, row := range rep.Rows {
				compared[row.ConfigID] = true
				// Token and event counts follow the latency model exactly.
				if (row.Metric == "output_tokens" || row.Metric == "text_events") && (row.Significant || row.ChangePct != 0) {
					t.Errorf("diff: %s %s changed by %.1f%% (p %.3g)", row.Label, row.Metric, row.ChangePct, row.P)
				}
			}
			if len(compared) != len(cfgs) {
				t.Errorf("diff compared %d configs, the plan has %d", len(compared), len(cfgs))
			}
		})
	}
}

// requestIDs returns the sorted ids of the requests, failing the test on one seen twice.
func requestIDs(t *testing.T, reqs []record.Request) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	for _, r := range reqs {
		id := results.RequestID(r.ConfigID, r.Seq)
		if seen[id] {
			t.Errorf("request %s recorded twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// configIDs returns the ids of configs, in order.
func configIDs(cfgs []experiment.Config) []string {
	ids := make([]string, len(cfgs))
	for i, c := range cfgs {
		ids[i] = c.ID
	}
	return ids
}
