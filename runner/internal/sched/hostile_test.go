package sched

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// hostileValues are flag values a shell would read as more than one word, or as a command, if
// they reached it unquoted. Each names the file "pwned" that an injected command would create.
var hostileValues = []string{
	"$(touch pwned)",
	"`touch pwned`",
	";touch pwned;",
	"x && touch pwned",
	"|touch pwned",
	"my results",
	"it's",
	`say "hi" \ there`,
	"$HOME*?[a]",
	"#not a comment",
	"~",
}

// stubRunner writes to dir/bin an executable named name that records its arguments, each
// ended by a NUL, to dir/argv, and returns the bin folder.
func stubRunner(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	stub := "#!/bin/sh\n: > " + shellQuote(filepath.Join(dir, "argv")) + "\nfor a in \"$@\"; do printf '%s\\0' \"$a\" >> " + shellQuote(filepath.Join(dir, "argv")) + "; done\n"
	if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runScript runs script with /bin/sh in the folder work, with bin first on PATH and env added,
// and returns the arguments the stub runner received; with bash true it runs the script with
// bash instead and returns nothing.
func runScript(t *testing.T, script, dir, work, bin string, bash bool, env ...string) []string {
	t.Helper()
	shell := "/bin/sh"
	if bash {
		b, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("no bash to run the Slurm script with")
		}
		shell = b
	}
	os.Remove(filepath.Join(dir, "argv"))
	cmd := exec.Command(shell, "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s\nscript:\n%s", shell, err, out, script)
	}
	if bash {
		// The Slurm script only submits: the stub runner runs in the jobs.
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatalf("the stub runner was not run: %v\nscript:\n%s", err, script)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// noInjection fails the test if any file named pwned exists under dir.
func noInjection(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "pwned" {
			t.Errorf("an injected command ran: %s exists", p)
		}
		return nil
	})
}

// jobScript returns the script a Job's container runs with sh -c.
func jobScript(t *testing.T, doc []byte) string {
	t.Helper()
	var j job
	if err := yaml.UnmarshalStrict(doc, &j); err != nil {
		t.Fatal(err)
	}
	c := j.Spec.Template.Spec.Containers[0].Command
	if len(c) != 3 || c[0] != "sh" || c[1] != "-c" {
		t.Fatalf("the Job's command is not sh -c SCRIPT: %q", c)
	}
	return c[2]
}

// TestKubernetesRunsHostileValues exports with a hostile --results, then runs the shard and
// merge Jobs' scripts as their pods would: the stub runner must receive the value as part of
// one argument, and no injected command may run.
func TestKubernetesRunsHostileValues(t *testing.T) {
	for _, h := range hostileValues {
		t.Run(h, func(t *testing.T) {
			dir := t.TempDir()
			work := filepath.Join(dir, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			bin := stubRunner(t, dir, "runner")
			mount := filepath.Join(dir, "r"+h)
			k := Kubernetes{Experiment: fixture(t, 2), Shards: 2, Image: "runner:1", ResultsMount: mount}
			var out bytes.Buffer
			if err := k.Write(&out); err != nil {
				t.Fatalf("--results %q refused: %v", mount, err)
			}
			docs := bytes.Split(out.Bytes(), []byte("\n---\n"))
			root := path.Join(mount, DefaultName("prefill-sweep"))

			got := runScript(t, jobScript(t, docs[0]), dir, work, bin, false, "JOB_COMPLETION_INDEX=1", "RUNNER_SHARDS=2")
			want := []string{"/experiment/prefill-sweep.yaml", "--shard", "auto", "--results", root + "/shard-1"}
			if !slices.Equal(got, want) {
				t.Errorf("the shard ran runner %q, want %q", got, want)
			}

			folder := filepath.Join(root, "shard-0", "prefill-sweep", "20250101T000000Z-aa")
			if err := os.MkdirAll(folder, 0o755); err != nil {
				t.Fatal(err)
			}
			got = runScript(t, jobScript(t, docs[1]), dir, work, bin, false)
			want = []string{"merge", "-o", root + "/merged", folder + "/"}
			if !slices.Equal(got, want) {
				t.Errorf("the merge ran runner %q, want %q", got, want)
			}
			noInjection(t, dir)
		})
	}
}

// TestSlurmRunsHostileValues exports with a hostile runner path and experiment file, and
// --results too where it can hold the value, then runs the printed script with a stub sbatch
// and each job script it submits with /bin/sh: the stub runner must receive every value as one
// argument, and no injected command may run. A --results a directive line cannot hold is
// refused.
func TestSlurmRunsHostileValues(t *testing.T) {
	for _, h := range hostileValues {
		t.Run(h, func(t *testing.T) {
			dir := t.TempDir()
			work := filepath.Join(dir, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			runner := "runner" + h
			bin := stubRunner(t, dir, runner)
			jobs := filepath.Join(dir, "jobs")
			if err := os.Mkdir(jobs, 0o755); err != nil {
				t.Fatal(err)
			}
			// The stub sbatch keeps each job script it is handed and answers a job id.
			sbatch := "#!/bin/sh\nn=$(ls " + shellQuote(jobs) + " | wc -l | tr -d ' ')\ncat > " + shellQuote(jobs) + "/job$n\necho \"100$n;cluster\"\n"
			if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(sbatch), 0o755); err != nil {
				t.Fatal(err)
			}
			e := fixture(t, 2)
			e.Path = "exp " + h + ".yaml"
			s := Slurm{Experiment: e, Shards: 2, Runner: runner, Results: "res" + h, Time: "1:00:00"}
			var out bytes.Buffer
			if err := s.Write(&out); err != nil {
				if !strings.ContainsAny(h, " \t") || !strings.Contains(err.Error(), "--results") {
					t.Fatalf("refused: %v", err)
				}
				// A directive line cannot hold a space: try the rest with a plain --results.
				s.Results = "res"
				out.Reset()
				if err := s.Write(&out); err != nil {
					t.Fatalf("refused: %v", err)
				}
			}
			runScript(t, out.String(), dir, work, bin, true)
			root := path.Join(s.Results, DefaultName("prefill-sweep"))
			array, err := os.ReadFile(filepath.Join(jobs, "job0"))
			if err != nil {
				t.Fatalf("the array job was not submitted: %v", err)
			}
			got := runScript(t, string(array), dir, work, bin, false, "SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=2")
			want := []string{e.Path, "--shard", "auto", "--results", root + "/shard-1"}
			if !slices.Equal(got, want) {
				t.Errorf("the array task ran runner %q, want %q", got, want)
			}

			folder := path.Join(root, "shard-0", "prefill-sweep", "20250101T000000Z-aa")
			if err := os.MkdirAll(filepath.Join(work, folder), 0o755); err != nil {
				t.Fatal(err)
			}
			merge, err := os.ReadFile(filepath.Join(jobs, "job1"))
			if err != nil {
				t.Fatalf("the merge job was not submitted: %v", err)
			}
			got = runScript(t, string(merge), dir, work, bin, false)
			want = []string{"merge", "-o", root + "/merged", folder + "/"}
			if !slices.Equal(got, want) {
				t.Errorf("the merge ran runner %q, want %q", got, want)
			}
			noInjection(t, dir)
		})
	}
}

// TestExportsRefuseLineBreaks checks that a value holding a line break or a NUL, which no
// quoting keeps on its line of a comment or a directive, is refused by both exports, naming
// what held it.
func TestExportsRefuseLineBreaks(t *testing.T) {
	for _, bad := range []string{"a\nb", "a\rb", "a\x00b"} {
		k := Kubernetes{Experiment: fixture(t, 1), Shards: 2, Image: "runner:1"}
		s := Slurm{Experiment: fixture(t, 1), Shards: 2}
		for _, c := range []struct {
			what string
			err  error
		}{
			{"--results", func() error { k := k; k.ResultsMount = "/r" + bad; return k.Check() }()},
			{"experiment file", func() error { k := k; k.Experiment.Path = bad + "/x.yaml"; return k.Check() }()},
			{"experiment name", func() error { k := k; k.Experiment.Name = bad; k.Name = "x"; return k.Check() }()},
			{"command line", func() error { k := k; k.Command = []string{"runner", bad}; return k.Check() }()},
			{"--runner", func() error { s := s; s.Runner = bad; return s.Check() }()},
			{"--results", func() error { s := s; s.Results = bad; return s.Check() }()},
			{"experiment file", func() error { s := s; s.Experiment.Path = bad + ".yaml"; return s.Check() }()},
			{"experiment name", func() error { s := s; s.Experiment.Name = bad; s.Name = "x"; return s.Check() }()},
			{"command line", func() error { s := s; s.Command = []string{"runner", bad}; return s.Check() }()},
		} {
			if c.err == nil || !strings.Contains(c.err.Error(), c.what) {
				t.Errorf("%s %q: Check() = %v, want an error naming %s", c.what, bad, c.err, c.what)
			}
		}
	}
}
