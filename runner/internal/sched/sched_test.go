package sched

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixture returns the experiment of testdata/sweep.yaml as the command would describe it.
func fixture(t *testing.T, servers int) Experiment {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "sweep.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	return Experiment{Path: "experiments/prefill-sweep.yaml", Name: "prefill-sweep", Source: src,
		SHA256: hex.EncodeToString(sum[:]), Servers: servers}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update creates it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// kubernetesCases are the Kubernetes exports under test, by golden file.
func kubernetesCases(t *testing.T) map[string]Kubernetes {
	e := fixture(t, 4)
	return map[string]Kubernetes{
		"kubernetes-t4.golden": {
			Experiment: e, Shards: 4, Image: "ghcr.io/onelayerdown/runner-vllm:v0.11.0",
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "Tesla-T4"},
			Command: []string{"runner", "export", "kubernetes", e.Path, "--shards", "4", "--image", "ghcr.io/onelayerdown/runner-vllm:v0.11.0",
				"--node-selector", "nvidia.com/gpu.product=Tesla-T4"},
		},
		"kubernetes-every-flag.golden": {
			Experiment: e, Shards: 12, Parallelism: 3, Image: "registry.example.com/bench/runner@sha256:0123abcd",
			GPUResource:  "amd.com/gpu",
			NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "pool": "bench"},
			ResultsClaim: "bench-results", ResultsMount: "/data/runs", Name: "sweep-0412", Namespace: "perf",
		},
	}
}

func TestKubernetesGolden(t *testing.T) {
	for name, k := range kubernetesCases(t) {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := k.Write(&out); err != nil {
				t.Fatal(err)
			}
			golden(t, name, out.Bytes())
		})
	}
}

func TestSlurmGolden(t *testing.T) {
	e := fixture(t, 4)
	for name, s := range map[string]Slurm{
		"slurm-t4.golden": {
			Experiment: e, Shards: 4, Partition: "t4", Time: "02:00:00",
			Command: []string{"runner", "export", "slurm", e.Path, "--shards", "4", "--partition", "t4", "--time", "02:00:00"},
		},
		"slurm-every-flag.golden": {
			Experiment: e, Shards: 16, Partition: "gpu-t4", Time: "1-12:00:00", Gres: "gpu:t4:1", Account: "perf-team",
			Runner: "/opt/runner bin/runner", Results: "/scratch/perf/results", Name: "sweep-0412",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := s.Write(&out); err != nil {
				t.Fatal(err)
			}
			golden(t, name, out.Bytes())
			checkBash(t, out.String())
		})
	}
}

// checkBash checks that the script and the job scripts it hands sbatch pass bash -n, and
// that each job script carries the directives an array and its merge need.
func checkBash(t *testing.T, script string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the script's syntax with")
	}
	syntax := func(what, s string) {
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("bash -n of %s: %v\n%s\n%s", what, err, out, s)
		}
	}
	syntax("the script", script)
	jobs := heredocs(script)
	if len(jobs) != 2 {
		t.Fatalf("want 2 job scripts handed to sbatch, found %d", len(jobs))
	}
	for i, want := range [][]string{{"#SBATCH --array=0-", "#SBATCH --gres=", "--shard auto"}, {"#SBATCH --job-name=", "#SBATCH --time=", "merge -o "}} {
		syntax("job script "+want[0], jobs[i])
		for _, w := range want {
			if !strings.Contains(jobs[i], w) {
				t.Errorf("job script %d lacks %q:\n%s", i, w, jobs[i])
			}
		}
	}
	if strings.Contains(jobs[1], "--gres") {
		t.Errorf("the merge job asks for a GPU:\n%s", jobs[1])
	}
	if !strings.Contains(script, "--dependency=afterok:\"$array\"") {
		t.Errorf("the merge is not submitted after the array succeeds:\n%s", script)
	}
}

// heredocs returns the bodies of the script's <<'EOF' here-documents.
func heredocs(script string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.SplitAfter(script, "\n") {
		switch {
		case cur == nil && strings.HasSuffix(line, "<<'EOF'\n"):
			cur = &strings.Builder{}
		case cur != nil && line == "EOF\n":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return out
}

func TestCheckRefuses(t *testing.T) {
	e := fixture(t, 1)
	good := Kubernetes{Experiment: e, Shards: 4, Image: "runner:1"}
	for _, c := range []struct {
		name string
		edit func(*Kubernetes)
		want string
	}{
		{"no shards", func(k *Kubernetes) { k.Shards = 0 }, "--shards must be at least 1, got 0"},
		{"negative shards", func(k *Kubernetes) { k.Shards = -2 }, "--shards must be at least 1, got -2"},
		{"no image", func(k *Kubernetes) { k.Image = "" }, "--image is required"},
		{"image with a space", func(k *Kubernetes) { k.Image = "runner 1" }, "--image \"runner 1\" holds a space"},
		{"parallelism above shards", func(k *Kubernetes) { k.Parallelism = 5 }, "--parallelism must be between 1 and --shards (4), got 5"},
		{"selector key", func(k *Kubernetes) { k.NodeSelector = map[string]string{"a/b/c": "x"} }, "--node-selector a/b/c=x: a valid label key"},
		{"selector value", func(k *Kubernetes) { k.NodeSelector = map[string]string{"gpu": "Tesla T4"} }, "--node-selector gpu=Tesla T4: a valid label must"},
		{"gpu resource", func(k *Kubernetes) { k.GPUResource = "nvidia.com/gpu/x" }, "--gpu-resource nvidia.com/gpu/x:"},
		{"claim", func(k *Kubernetes) { k.ResultsClaim = "Results" }, "--results-claim Results:"},
		{"relative mount", func(k *Kubernetes) { k.ResultsMount = "results" }, "--results \"results\": want an absolute path"},
		{"root mount", func(k *Kubernetes) { k.ResultsMount = "/" }, "--results \"/\": want an absolute path"},
		{"name", func(k *Kubernetes) { k.Name = "Sweep_1" }, "--name Sweep_1: a lowercase RFC 1123 label"},
		{"long name", func(k *Kubernetes) { k.Name = strings.Repeat("a", 58) }, "at most 57 characters"},
		{"namespace", func(k *Kubernetes) { k.Namespace = "perf.team" }, "--namespace perf.team:"},
		{"file name", func(k *Kubernetes) { k.Experiment.Path = "x/a b.yaml" }, "experiment file name a b.yaml:"},
		{"file too large", func(k *Kubernetes) { k.Experiment.Source = make([]byte, 1<<20) }, "do not fit in a ConfigMap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := good
			c.edit(&k)
			err := k.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error holding %q", err, c.want)
			}
			if err := k.Write(&bytes.Buffer{}); err == nil {
				t.Error("Write wrote manifests Check refuses")
			}
		})
	}
	if err := good.Check(); err != nil {
		t.Errorf("Check of a good export: %v", err)
	}
}

func TestSlurmCheckRefuses(t *testing.T) {
	good := Slurm{Experiment: fixture(t, 1), Shards: 2}
	for _, c := range []struct {
		name string
		edit func(*Slurm)
		want string
	}{
		{"no shards", func(s *Slurm) { s.Shards = 0 }, "--shards must be at least 1, got 0"},
		{"partition with a space", func(s *Slurm) { s.Partition = "t4 a100" }, "--partition \"t4 a100\" holds a space"},
		{"time with a line break", func(s *Slurm) { s.Time = "1:00\n#SBATCH --x" }, "--time"},
		{"account with a tab", func(s *Slurm) { s.Account = "a\tb" }, "--account"},
		{"results with a space", func(s *Slurm) { s.Results = "my results" }, "--results"},
		{"runner with a line break", func(s *Slurm) { s.Runner = "run\nner" }, "--runner"},
		{"name with a quote", func(s *Slurm) { s.Name = "it's" }, "--name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := good
			c.edit(&s)
			if err := s.Write(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Write() = %v, want an error holding %q", err, c.want)
			}
		})
	}
}

func TestDefaultName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"prefill-sweep", "runner-prefill-sweep"},
		{"cpu_demo.v2", "runner-cpu-demo-v2"},
		{"--x--", "runner-x"},
		{strings.Repeat("a", 80), "runner-" + strings.Repeat("a", maxNameLen-len("runner-"))},
		{strings.Repeat("a", 49) + "-b", "runner-" + strings.Repeat("a", 49)},
	} {
		got := DefaultName(c.in)
		if got != c.want {
			t.Errorf("DefaultName(%q) = %q, want %q", c.in, got, c.want)
		}
		if len(got) > maxNameLen {
			t.Errorf("DefaultName(%q) = %q: longer than %d", c.in, got, maxNameLen)
		}
	}
}

func TestEmptyShards(t *testing.T) {
	e := fixture(t, 1)
	if got := EmptyShards(e, 1); got != "" {
		t.Errorf("one shard of one server config: note %q", got)
	}
	got := EmptyShards(e, 4)
	if want := "has 1 server config and a server config is never split, so 3 of the 4 shards will run nothing"; !strings.Contains(got, want) {
		t.Errorf("EmptyShards = %q, want it to hold %q", got, want)
	}
}

// TestShardScriptResumes runs the script a shard runs, with a stand-in runner that prints its
// arguments: a first attempt starts a folder under the shard's root, a later one resumes the
// newest folder there, and one after that folder is complete runs nothing.
func TestShardScriptResumes(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the script with")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake runner")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "results", "run")
	script := shardScript(fake, "experiments/x.yaml", root, "SLURM_ARRAY_TASK_ID", "x")
	run := func() string {
		t.Helper()
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=2")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return strings.ReplaceAll(string(out), "\n", " ")
	}
	if got, want := run(), "experiments/x.yaml --shard auto --results "+root+"/shard-2 "; got != want {
		t.Errorf("first attempt ran %q, want %q", got, want)
	}
	for _, f := range []string{"20250101T000000Z-aa", "20250102T000000Z-bb"} {
		if err := os.MkdirAll(filepath.Join(root, "shard-2", "x", f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "shard-1", "x", "20250103T000000Z-cc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := run(), "experiments/x.yaml --shard auto --resume "+root+"/shard-2/x/20250102T000000Z-bb/ "; got != want {
		t.Errorf("second attempt ran %q, want %q", got, want)
	}
	// An attempt after the folder was finished runs nothing: a resume of a complete folder
	// would fail the task, and with it the merge that waits for every task.
	manifest := filepath.Join(root, "shard-2", "x", "20250102T000000Z-bb", "manifest.json")
	if err := os.WriteFile(manifest, []byte("{\n  \"schema_version\": 1,\n  \"status\": \"complete\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(); strings.Contains(got, "--resume") || !strings.Contains(got, "is complete") {
		t.Errorf("an attempt after the shard's folder was complete ran %q, want nothing run", got)
	}
}

func TestShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"runner", "runner"},
		{"/opt/runner-1.2/bin/runner", "/opt/runner-1.2/bin/runner"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestSlurmMergeHasTime checks that the merge job asks for a time limit: the shards' --time
// when given, DefaultMergeTime otherwise, so that it never waits on a partition's default
// (often its longest) limit.
func TestSlurmMergeHasTime(t *testing.T) {
	for _, c := range []struct{ time, want string }{
		{"02:00:00", "#SBATCH --time=02:00:00\n"},
		{"", "#SBATCH --time=" + DefaultMergeTime + "\n"},
	} {
		var out bytes.Buffer
		if err := (Slurm{Experiment: fixture(t, 2), Shards: 2, Time: c.time}).Write(&out); err != nil {
			t.Fatal(err)
		}
		jobs := heredocs(out.String())
		if len(jobs) != 2 {
			t.Fatalf("want 2 job scripts, found %d", len(jobs))
		}
		if got := strings.Count(jobs[1], "#SBATCH --time="); got != 1 || !strings.Contains(jobs[1], c.want) {
			t.Errorf("--time %q: the merge job does not hold %q once:\n%s", c.time, c.want, jobs[1])
		}
		if c.time == "" && strings.Contains(jobs[0], "#SBATCH --time=") {
			t.Errorf("no --time: the array job has a time limit of its own making:\n%s", jobs[0])
		}
	}
}
