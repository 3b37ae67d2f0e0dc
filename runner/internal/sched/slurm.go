package sched

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"strings"
)

// Defaults of a Slurm export.
const (
	DefaultGres    = "gpu:1"
	DefaultRunner  = "runner"
	DefaultResults = "results"
	// DefaultMergeTime is the merge job's time limit when --time gives the shards none. A
	// merge reads and copies the shards' files, minutes even for a large run; without a limit
	// of its own it would get the partition's default, often its longest, and wait behind it.
	DefaultMergeTime = "1:00:00"
)

// Slurm describes the bash script that submits an experiment's shards as a Slurm job array,
// one task per shard, and a merge job that runs once every task has succeeded.
type Slurm struct {
	Experiment Experiment
	Shards     int      // array tasks 0..Shards-1
	Partition  string   // "" leaves it to the cluster's default
	Time       string   // the time limit of the array tasks and the merge; "" leaves the tasks' to the partition and gives the merge DefaultMergeTime
	Gres       string   // the generic resources of one task; "" means DefaultGres
	Account    string   // "" leaves it to the user's default
	Runner     string   // the runner executable on the compute nodes; "" means DefaultRunner
	Results    string   // a folder every node mounts; "" means DefaultResults
	Name       string   // the jobs' name; "" means DefaultName
	Command    []string // the command line that wrote the script, for its header
}

// withDefaults returns s with its empty fields set to their defaults.
func (s Slurm) withDefaults() Slurm {
	s.Gres = cmp.Or(s.Gres, DefaultGres)
	s.Runner = cmp.Or(s.Runner, DefaultRunner)
	s.Results = cmp.Or(s.Results, DefaultResults)
	s.Name = cmp.Or(s.Name, DefaultName(s.Experiment.Name))
	return s
}

// Check reports every setting that cannot be written into the script, naming the flag that
// set it.
func (s Slurm) Check() error {
	s = s.withDefaults()
	list := []error{checkShards(s.Shards), checkWord("--gres", s.Gres), checkWord("--name", s.Name),
		checkPath("--runner", s.Runner), checkWord("--results", s.Results)}
	list = append(list, checkCommon(s.Experiment, s.Command)...)
	for _, f := range []struct{ flag, v string }{{"--partition", s.Partition}, {"--time", s.Time}, {"--account", s.Account}} {
		if f.v != "" {
			list = append(list, checkWord(f.flag, f.v))
		}
	}
	if strings.ContainsAny(s.Name, `'"\$`+"`") {
		list = append(list, fmt.Errorf("--name %q holds a quote, a backslash or a dollar sign", s.Name))
	}
	return errs(list...)
}

// Write writes the bash script. The two job scripts go to sbatch on its standard input, in
// quoted here-documents, so that nothing in them is expanded when they are submitted: every
// value is written out, and $SLURM_ARRAY_TASK_ID is read by the task that runs.
func (s Slurm) Write(w io.Writer) error {
	if err := s.Check(); err != nil {
		return err
	}
	s = s.withDefaults()
	root := path.Join(s.Results, s.Name)
	var opts []string
	for _, o := range []struct{ name, v string }{{"partition", s.Partition}, {"account", s.Account}} {
		if o.v != "" {
			opts = append(opts, "#SBATCH --"+o.name+"="+o.v)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/bash
# Runs %s as %s on a Slurm job array, one task
# and %s each, then merges the shard folders into one result folder once every task
# has succeeded. Printed, never submitted: review it, then run it with bash on a login
# node, from the folder the paths below are relative to (sbatch runs the jobs there).
# Every node must mount %s. Shard INDEX writes under
# %s/shard-INDEX; to run again, choose another --name (or empty %s).
`, s.Experiment.Path, plural(s.Shards, "shard"), s.Gres, s.Results, root, root)
	if len(s.Command) > 0 {
		fmt.Fprintf(&b, "# Written by: %s\n", commandLine(s.Command))
	}
	fmt.Fprintf(&b, "# Experiment sha256: %s\n", s.Experiment.SHA256)
	fmt.Fprintf(&b, "set -euo pipefail\n\nmkdir -p %s\n\n", shellQuote(root))

	// The array task: Slurm sets SLURM_ARRAY_TASK_ID, _MIN and _COUNT, and --shard auto reads
	// the index and the count from them.
	b.WriteString("# The shards: one array task per shard. --parsable prints the job id (and \";cluster\").\n")
	b.WriteString("array=$(sbatch --parsable <<'EOF'\n#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", s.Name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", s.Shards-1)
	fmt.Fprintf(&b, "#SBATCH --gres=%s\n", s.Gres)
	for _, o := range opts {
		b.WriteString(o + "\n")
	}
	if s.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", s.Time)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", path.Join(root, "slurm-%A_%a.out"))
	b.WriteString(shardScript(s.Runner, s.Experiment.Path, root, "SLURM_ARRAY_TASK_ID", s.Experiment.Name))
	b.WriteString("EOF\n)\narray=${array%%;*}\n\n")

	// The merge: afterok on an array job waits for every task to succeed; a failed task
	// makes the dependency impossible, and kill-on-invalid-dep cancels the merge instead of
	// leaving it pending for ever.
	b.WriteString("# The merge: no GPU, once every shard has succeeded. If one fails, Slurm cancels it:\n")
	b.WriteString("# run runner merge --partial by hand to keep what the other shards measured.\n")
	b.WriteString("merge=$(sbatch --parsable --dependency=afterok:\"$array\" --kill-on-invalid-dep=yes <<'EOF'\n#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s-merge\n", s.Name)
	for _, o := range opts {
		b.WriteString(o + "\n")
	}
	// The shards' limit serves the merge too, which only reads what they wrote; without
	// --time, the merge gets a limit of its own rather than the partition's.
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", cmp.Or(s.Time, DefaultMergeTime))
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", path.Join(root, "slurm-merge-%j.out"))
	b.WriteString("set -eu\n")
	b.WriteString(mergeScript(s.Runner, root, s.Experiment.Name))
	b.WriteString("EOF\n)\nmerge=${merge%%;*}\n\n")
	b.WriteString("echo \"submitted the shards as job $array and their merge as job $merge\"\n")
	fmt.Fprintf(&b, "echo 'the merged result folder will be:' %s\n", shellQuote(path.Join(root, "merged")))
	_, err := io.WriteString(w, b.String())
	return err
}
