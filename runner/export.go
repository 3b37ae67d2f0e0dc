package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/export"
	"github.com/onelayerdown/runner/runner/internal/plan"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/sched"
)

const exportDescription = `
runner export parquet writes each CSV file of a result folder as a Parquet file with explicit
column types, the types of the tables that write the CSV files (the folder's datapackage.json
lists them): integers as INT64, decimals as DOUBLE, booleans as BOOLEAN, timestamps as
TIMESTAMP(NANOS, UTC), text as STRING holding the cell's text as in the CSV. A column that can
be empty is optional and an empty cell is null, so a column that is empty in every row
(tokens_from_ids on an engine that never reports token ids) is still an integer column.

The files go to RESULT_DIR/parquet/ unless -o names another folder: requests.csv becomes
requests.parquet, and so on. The CSV files are never changed; an earlier export's files of the
same names are replaced. An interrupted folder exports what it holds: its torn last line and
its missing summary.csv are skipped, with a note.

runner export kubernetes and runner export slurm print what runs an experiment as shards on a
cluster, then merges them: see runner export kubernetes --help and runner export slurm --help.`

// exportSynopsis is the usage line of every export.
const exportSynopsis = `runner export parquet RESULT_DIR [-o OUT_DIR]
       runner export kubernetes FILE --shards N --image IMAGE [flags]
       runner export slurm FILE --shards N [flags]`

// cmdExport converts a result folder's CSV files to another format, or prints what runs an
// experiment's shards on a scheduler.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "kubernetes":
			return cmdExportKubernetes(args[1:], stdout, stderr)
		case "slurm":
			return cmdExportSlurm(args[1:], stdout, stderr)
		}
	}
	const synopsis = "runner export parquet RESULT_DIR [-o OUT_DIR]"
	fs := newFlagSet("export", exportSynopsis, exportDescription, stderr)
	out := fs.String("o", "", "the folder to write the Parquet files to (default RESULT_DIR/"+export.ParquetDir+")")
	operands, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(operands) > 0 && operands[0] != "parquet" {
		return usageError("unknown format %q: want parquet, kubernetes or slurm", operands[0])
	}
	if len(operands) != 2 {
		return usageError("want a format and one result folder (usage: %s)", synopsis)
	}
	dir := operands[1]
	if _, err := results.Open(dir); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *out == "" {
		*out = filepath.Join(dir, export.ParquetDir)
	}
	rep, err := export.Parquet(dir, *out)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	for _, n := range rep.Notes {
		warnf(stderr, "export: %s: %s", dir, n)
	}
	for _, f := range rep.Files {
		if _, err := fmt.Fprintf(stdout, "%s: %d rows, %d columns\n", f.Path, f.Rows, f.Columns); err != nil {
			return err
		}
	}
	return nil
}

const exportKubernetesDescription = `
Print the Kubernetes objects that run an experiment as N shards, one GPU machine each, and then
merge the shard folders into one result folder: an Indexed Job (completions N, one GPU per pod,
a retry per index; needs Kubernetes 1.29 or later), a suspended merge Job to start once the
shards have completed, and a ConfigMap holding the experiment file. The pods write to a
ReadWriteMany PersistentVolumeClaim mounted at --results. Printed, never applied: review the
output, then kubectl apply -f it.

Exit status: 0 when printed; 2 on an invalid experiment file or bad flags.`

// cmdExportKubernetes prints the Kubernetes manifests of a sharded run.
func cmdExportKubernetes(args []string, stdout, stderr io.Writer) error {
	const synopsis = "runner export kubernetes FILE --shards N --image IMAGE [--parallelism P] [--gpu-resource NAME] [--node-selector KEY=VALUE]... [--results-claim PVC] [--results DIR] [--name NAME] [--namespace NS]"
	fs := newFlagSet("export kubernetes", synopsis, exportKubernetesDescription, stderr)
	shards := fs.Int("shards", 0, "the number of shards, one pod and one GPU each (required)")
	image := fs.String("image", "", "the container `image`: runner on PATH, sh and the engine (required)")
	parallelism := fs.Int("parallelism", 0, "the most shard pods at once (default: --shards)")
	gpu := fs.String("gpu-resource", sched.DefaultGPUResource, "the extended resource `name` of one GPU")
	var selector nodeSelector
	fs.Var(&selector, "node-selector", "a node label `KEY=VALUE` the shard pods' nodes must have (repeat for more)")
	claim := fs.String("results-claim", sched.DefaultResultsClaim, "the ReadWriteMany PersistentVolumeClaim the results are written to")
	mount := fs.String("results", sched.DefaultResultsMount, "where the claim is mounted in the pods")
	name := fs.String("name", "", "the Job's name (default runner-EXPERIMENT)")
	namespace := fs.String("namespace", "", "the namespace of every object (default: kubectl's)")
	return exportSchedule(fs, args, synopsis, shards, func(e sched.Experiment) schedule {
		return sched.Kubernetes{
			Experiment: e, Shards: *shards, Parallelism: *parallelism, Image: *image, GPUResource: *gpu,
			NodeSelector: selector.labels, ResultsClaim: *claim, ResultsMount: *mount, Name: *name,
			Namespace: *namespace, Command: append([]string{"runner", "export", "kubernetes"}, args...),
		}
	}, stdout, stderr)
}

const exportSlurmDescription = `
Print a bash script that submits an experiment as N shards on a Slurm job array (--array=0-(N-1),
one task per GPU machine, --shard auto reading SLURM_ARRAY_TASK_ID) and a merge job that runs
once every task has succeeded (--dependency=afterok). Run it from the folder the experiment file
and --results are relative to; --results must be on a filesystem every node mounts. Printed,
never submitted: review the script, then run it with bash.

Exit status: 0 when printed; 2 on an invalid experiment file or bad flags.`

// cmdExportSlurm prints the sbatch script of a sharded run.
func cmdExportSlurm(args []string, stdout, stderr io.Writer) error {
	const synopsis = "runner export slurm FILE --shards N [--partition P] [--time T] [--gres GRES] [--account A] [--runner PATH] [--results DIR] [--name NAME]"
	fs := newFlagSet("export slurm", synopsis, exportSlurmDescription, stderr)
	shards := fs.Int("shards", 0, "the number of shards, one array task each (required)")
	partition := fs.String("partition", "", "the `partition` of both jobs (default: the cluster's)")
	limit := fs.String("time", "", "the time `limit` of the array tasks and of the merge, in sbatch's form (default: the partition's for the tasks, "+sched.DefaultMergeTime+" for the merge)")
	gres := fs.String("gres", sched.DefaultGres, "the generic resources of one array task")
	account := fs.String("account", "", "the `account` both jobs are charged to (default: yours)")
	runner := fs.String("runner", sched.DefaultRunner, "the runner executable on the compute nodes")
	results := fs.String("results", sched.DefaultResults, "the folder the run is written under, on a filesystem every node mounts")
	name := fs.String("name", "", "the jobs' name, also the run's folder under --results (default runner-EXPERIMENT)")
	return exportSchedule(fs, args, synopsis, shards, func(e sched.Experiment) schedule {
		return sched.Slurm{
			Experiment: e, Shards: *shards, Partition: *partition, Time: *limit, Gres: *gres,
			Account: *account, Runner: *runner, Results: *results, Name: *name,
			Command: append([]string{"runner", "export", "slurm"}, args...),
		}
	}, stdout, stderr)
}

// schedule is what an export to a scheduler prints: a sched.Kubernetes or a sched.Slurm.
type schedule interface {
	Check() error
	Write(io.Writer) error
}

// exportSchedule is the part every export to a scheduler shares: it parses fs from args, loads
// the one experiment file, refuses a shard count above the plan's bound, builds the export with
// build (called once the flags are parsed), refuses with exit status 2 what the scheduler
// would, notes the shards that will run nothing, and prints the export.
func exportSchedule(fs *flag.FlagSet, args []string, synopsis string, shards *int, build func(sched.Experiment) schedule, stdout, stderr io.Writer) error {
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if *shards > plan.MaxShards {
		return usageError("--shards %d: %w", *shards, plan.CheckCount(*shards))
	}
	e, err := exportExperiment(files, synopsis)
	if err != nil {
		return err
	}
	s := build(e)
	if err := s.Check(); err != nil {
		return &exitError{code: 2, err: err}
	}
	if note := sched.EmptyShards(e, *shards); note != "" {
		warnf(stderr, "%s: %s", fs.Name(), note)
	}
	return s.Write(stdout)
}

// exportExperiment loads the one experiment file of a scheduler export: the file is checked
// and expanded here so that a bad file fails now, not on every machine of the cluster.
func exportExperiment(files []string, synopsis string) (sched.Experiment, error) {
	if len(files) != 1 {
		return sched.Experiment{}, usageError("want exactly one experiment file, got %d (usage: %s)", len(files), synopsis)
	}
	exp, cfgs, err := readExperiment(files[0])
	if err != nil {
		return sched.Experiment{}, err
	}
	servers := map[string]bool{}
	for _, c := range cfgs {
		servers[c.ServerID] = true
	}
	return sched.Experiment{Path: files[0], Name: exp.Name, Source: exp.Source,
		SHA256: results.SHA256(exp.Source), Servers: len(servers)}, nil
}

// nodeSelector is the repeatable --node-selector flag: one KEY=VALUE node label each time.
type nodeSelector struct{ labels map[string]string }

var _ flag.Value = (*nodeSelector)(nil)

// String returns the labels given so far, sorted.
func (s *nodeSelector) String() string {
	var kv []string
	for k, v := range s.labels {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

// Set adds one KEY=VALUE label; the label's rules are checked with the rest of the manifest.
func (s *nodeSelector) Set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	if s.labels == nil {
		s.labels = map[string]string{}
	}
	if old, dup := s.labels[key]; dup && old != value {
		return fmt.Errorf("label %s given twice (%s and %s)", key, old, value)
	}
	s.labels[key] = value
	return nil
}
