package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/orchestrate"
	"github.com/onelayerdown/runner/runner/internal/plan"
	"github.com/onelayerdown/runner/runner/internal/redact"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/summary"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

const runDescription = `
Run an experiment: expand its matrix, boot one server per distinct server config, send every
config's warm-up and measured requests, and write a new result folder under --results
(results/<experiment name>/<UTC time>-<id>/). Each request is appended to the folder as it
completes, so an interrupted run loses at most the request in flight; finish it with --resume.

With --shard I/N the run is one shard of N, one per machine: it runs only the configs of shard
I (from 0), whole server configs balanced by requests as 'runner plan --shards N' shows, and
writes an ordinary result folder named ...-shard-I-of-N that 'runner merge' joins to the
others. --shard auto/N takes the index from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) or
a Slurm job array (SLURM_ARRAY_TASK_ID, less SLURM_ARRAY_TASK_MIN); plain --shard auto also
takes the count, from RUNNER_SHARDS or SLURM_ARRAY_TASK_COUNT. A shard with no configs writes
a complete, empty folder.

On Ctrl-C the run stops the request in flight, stops its server, marks the folder interrupted
and prints the command that resumes it; a second Ctrl-C exits at once.

Exit status: 0 when every request succeeded; 1 when some failed (a server that did not boot,
a request that failed) or the run could not finish; 2 on an invalid experiment file or bad
flags; 130 when interrupted.`

// runFlags are the flags of runner run.
type runFlags struct {
	root, resume, shard         string
	dryRun, wide, quiet, record bool
	// sharded is whether --shard was given at all: an empty value is refused, not taken for
	// a whole run.
	sharded   bool
	stopGrace time.Duration
}

// cmdRun runs an experiment file into a new result folder, or finishes an interrupted one, and
// prints its summary.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl, file, helped, err := parseRunFlags(args, stderr)
	if helped || err != nil {
		return err
	}
	exp, cfgs, err := readExperiment(file)
	if err != nil {
		return err
	}
	var shard *results.Shard
	if fl.sharded {
		all := len(cfgs)
		if shard, cfgs, err = selectShard(fl.shard, exp, cfgs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "shard %d of %d (index from %s): %s of %d, %s\n", shard.Index, shard.Count, shard.Source,
			tabular.Plural(len(cfgs), "config"), all, tabular.Plural(experiment.Requests(cfgs), "request"))
	}
	if fl.dryRun {
		return plan.NewTextEncoder(stdout).Encode(plan.New(exp, cfgs))
	}
	// A server that cannot start here (its executable is not installed) would only fill a
	// folder with failed rows: say so at once and write nothing, unless asked to record it.
	if problems := preflight(cfgs); len(problems) > 0 && !fl.record {
		return &exitError{code: 1, err: errors.New(strings.Join(problems, "\n") +
			"\nnothing was run and no result folder was written (--record-failures writes one with these requests failed)")}
	}

	var folder *results.Folder
	var done results.Done
	if fl.resume != "" {
		folder, done, err = resumeFolder(fl.resume, exp, cfgs, shard, args, stderr)
	} else {
		folder, err = createFolder(fl.root, exp, cfgs, shard, args, stderr)
	}
	if err != nil {
		return err
	}

	// What resumes the folder: a shard's folder resumes only as the same shard.
	resumeArgs := file + " --resume " + folder.Dir()
	if shard != nil {
		resumeArgs += fmt.Sprintf(" --shard %d/%d", shard.Index, shard.Count)
	}
	out, err := runInto(ctx, folder, exp, cfgs, done, fl, resumeArgs, stderr)
	if err != nil {
		return err
	}
	return printRun(stdout, folder, out, fl.wide)
}

// parseRunFlags parses the command line of runner run and returns its flags and its one
// experiment file.
func parseRunFlags(args []string, stderr io.Writer) (fl runFlags, file string, helped bool, err error) {
	fs := newFlagSet("run", "runner [run] FILE [--results DIR] [--resume DIR] [--shard I/N|auto/N|auto] [--dry-run] [--quiet] [--wide] [--stop-grace D] [--record-failures]", runDescription, stderr)
	fs.StringVar(&fl.root, "results", "results", "the folder that result folders are created in")
	fs.StringVar(&fl.resume, "resume", "", "finish the interrupted result folder `DIR` instead of starting a new one")
	fs.BoolVar(&fl.dryRun, "dry-run", false, "check and plan the experiment, then stop without booting anything")
	fs.BoolVar(&fl.wide, "wide", false, "end with the summary's every column (p99, mean, stddev) instead of a table that fits 100 columns")
	fs.BoolVar(&fl.quiet, "quiet", false, "print no progress, only problems (a server that did not boot or exited, and why)")
	fs.StringVar(&fl.shard, "shard", "", "run only shard `I/N` of the plan (I from 0); auto/N or auto read the index, and the count, from a Kubernetes Indexed Job's or a Slurm array's environment")
	fs.DurationVar(&fl.stopGrace, "stop-grace", engine.DefaultStopGrace, "how long a booted server gets to exit after SIGTERM before it is killed (0: the default)")
	fs.BoolVar(&fl.record, "record-failures", false, "when a server's executable cannot be found, write the result folder anyway, with its requests recorded as failed")
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return fl, "", helped, err
	}
	if len(files) != 1 {
		return fl, "", false, usageError("want exactly one experiment file, got %d (usage: runner FILE [flags]; see runner run --help)", len(files))
	}
	if fl.root == "" {
		// An unset variable (--results "$OUT") would otherwise write into the current folder.
		return fl, "", false, usageError("--results is empty: want the folder that result folders are created in (default %q)", "results")
	}
	fl.sharded = flagSet(fs, "shard")
	if fl.stopGrace < 0 {
		return fl, "", false, usageError("--stop-grace %s: want a duration of zero or more (0 means %s)", fl.stopGrace, engine.DefaultStopGrace)
	}
	return fl, files[0], false, nil
}

// resumeFolder opens the interrupted folder dir to finish it as shard, after checking that it
// was written from the same experiment, shard and order, and returns it with the requests it
// holds. A folder that may not be resumed is bad input (exit status 2).
func resumeFolder(dir string, exp *experiment.Experiment, cfgs []experiment.Config, shard *results.Shard, args []string, stderr io.Writer) (*results.Folder, results.Done, error) {
	man, err := results.ReadManifest(dir)
	if err != nil {
		return nil, results.Done{}, &exitError{code: 2, err: fmt.Errorf("resume: %w", err)}
	}
	if err := man.CheckResume(exp, shard, orchestrate.ScheduleVersion); err != nil {
		return nil, results.Done{}, &exitError{code: 2, err: fmt.Errorf("resume %s: %w", dir, err)}
	}
	folder, done, err := results.Resume(dir)
	if err != nil {
		// Its error names the folder it resumes.
		return nil, results.Done{}, &exitError{code: 2, err: err}
	}
	folder.HideSecrets(cfgs, redact.ArgSecrets(args)...)
	fmt.Fprintf(stderr, "resuming %s: %d requests already recorded\n", folder.Dir(), done.Len())
	// A load point cut short is run again whole: its rows were measured under a load that
	// did not run to its end, and must not be mixed with the new ones.
	if partial := orchestrate.PartialLoadPoints(cfgs, done); len(partial) > 0 {
		before := done.Len()
		if done, err = folder.Discard(partial, "load point interrupted part way; run again whole"); err != nil {
			return nil, results.Done{}, fmt.Errorf("resume: %w", err)
		}
		fmt.Fprintf(stderr, "resume: %d load point(s) were cut short (%s): their %d rows are moved to %s and they run again whole\n",
			len(partial), strings.Join(partial, ", "), before-done.Len(), filepath.Join(folder.Dir(), "discarded"))
	}
	return folder, done, nil
}

// createFolder creates a new result folder under root for the run of exp's cfgs as shard
// (nil: the whole plan), recording this runner and its command line.
func createFolder(root string, exp *experiment.Experiment, cfgs []experiment.Config, shard *results.Shard, args []string, stderr io.Writer) (*results.Folder, error) {
	ver, commit := buildInfo()
	folder, err := results.Create(root, exp, cfgs, results.RunInfo{
		RunnerVersion: ver, RunnerCommit: commit, Command: append([]string{"runner"}, args...),
		Schedule: orchestrate.ScheduleVersion, Shard: shard,
	})
	if err != nil {
		// Its error names the folder it creates.
		return nil, err
	}
	fmt.Fprintf(stderr, "writing %s\n", folder.Dir())
	return folder, nil
}

// runInto sends the requests of cfgs that done does not hold yet, records them in folder, and
// closes the folder with the run's status. Its error says how to resume the folder when the
// run did not finish: resumeArgs are the arguments of runner that do.
func runInto(ctx context.Context, folder *results.Folder, exp *experiment.Experiment, cfgs []experiment.Config, done results.Done, fl runFlags, resumeArgs string, stderr io.Writer) (orchestrate.Outcome, error) {
	// A second Ctrl-C exits at once; the folder on disk must still say interrupted, not running.
	unhook := hardExit.add(func() {
		if err := folder.MarkInterrupted(2 * time.Second); err != nil {
			warnf(stderr, "%v", err)
			return
		}
		warnf(stderr, "%s is marked interrupted; resume with: runner %s", folder.Dir(), resumeArgs)
	})
	defer unhook()

	// What the progress display shows of errors (a server's answer may echo a key) hides the
	// run's secrets, as the folder does.
	shown := folder.Secrets().Writer(stderr)
	progress := orchestrate.NewQuietProgress(shown)
	if !fl.quiet {
		progress = orchestrate.NewProgress(shown, isTerminal(stderr)).Width(func() int { return terminalWidth(stderr) })
	}
	out, runErr := orchestrate.Run(ctx, orchestrate.Options{
		Experiment: exp, Configs: cfgs, Done: done, Logs: folder.ServerLog,
		Subscribers: []orchestrate.Subscriber{orchestrate.Record(folder), progress},
		StopGrace:   fl.stopGrace,
	})

	status := results.StatusComplete
	switch {
	case out.Interrupted || errors.Is(runErr, context.Canceled):
		status = results.StatusInterrupted
	case runErr != nil:
		status = results.StatusFailed
	}
	if err := folder.Close(status); err != nil {
		// The rows are on disk; only the summary or the manifest's last word is missing, and a
		// folder whose writer is gone reads as interrupted, so a resume finishes it.
		return out, errors.Join(runErr, fmt.Errorf("close %s: %w\nthe requests recorded so far are kept; once there is room, finish the folder with: runner %s",
			folder.Dir(), err, resumeArgs))
	}
	if status == results.StatusInterrupted {
		return out, &exitError{code: 130, err: fmt.Errorf("interrupted after %d requests; the folder keeps them. Resume with:\n  runner %s", out.Sent, resumeArgs)}
	}
	if runErr != nil {
		return out, fmt.Errorf("%w\nthe requests recorded so far are in %s (resume with: runner %s)", runErr, folder.Dir(), resumeArgs)
	}
	return out, nil
}

// printRun prints the summary of a finished run's folder and where it is; a run in which some
// requests failed exits with status 1.
func printRun(stdout io.Writer, folder *results.Folder, out orchestrate.Outcome, wide bool) error {
	rep, err := summary.Read(folder.Dir())
	if err != nil {
		return err
	}
	if err := summary.NewTextEncoder(stdout).Wide(wide).Encode(rep); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "\nresults: %s\n", folder.Dir()); err != nil {
		return err
	}
	if out.Failed > 0 || out.BootFailed > 0 {
		var parts []string
		if out.BootFailed > 0 {
			parts = append(parts, tabular.Plural(out.BootFailed, "server config")+" failed to boot")
		}
		parts = append(parts, fmt.Sprintf("%d of %d requests failed", out.Failed, out.Sent))
		return &exitError{code: 1, err: errors.New(strings.Join(parts, "; ") + " (see errors.jsonl and logs/ in the folder)")}
	}
	return nil
}

// selectShard reads the value of --shard and returns the shard it names, as its folder's
// manifest records it, with its configs, in plan order. A bad value is a usage error.
func selectShard(spec string, exp *experiment.Experiment, cfgs []experiment.Config) (*results.Shard, []experiment.Config, error) {
	w, err := plan.ParseShard(spec, os.Getenv)
	if err != nil {
		return nil, nil, usageError("%w", err)
	}
	mine := plan.ShardConfigs(cfgs, w.Count, w.Index)
	host, _ := os.Hostname()
	shard := &results.Shard{Index: w.Index, Count: w.Count, Fingerprint: plan.Fingerprint(results.SHA256(exp.Source), w.Count),
		Configs: make([]string, 0, len(mine)), Source: w.Source, Host: host}
	for _, c := range mine {
		shard.Configs = append(shard.Configs, c.ID)
	}
	return shard, mine, nil
}

// preflight checks that every distinct server of cfgs can be started on this machine and returns
// one problem per server that cannot, with its hint.
func preflight(cfgs []experiment.Config) []string {
	self, _ := os.Executable()
	var problems []string
	seen := map[string]bool{}
	for _, c := range cfgs {
		if seen[c.ServerID] {
			continue
		}
		seen[c.ServerID] = true
		err := engine.Preflight(c.Server, self)
		if err == nil {
			continue
		}
		msg := err.Error()
		var be *engine.BootError
		if errors.As(err, &be) {
			msg = be.Engine + ": " + be.Reason
			if be.Hint != "" {
				msg += "\n  hint: " + be.Hint
			}
		}
		problems = append(problems, fmt.Sprintf("server %s (config %s): %s", c.ServerID, c.Label, msg))
	}
	return problems
}

// terminalWidth returns the columns of the terminal w, from the kernel (so that a resized
// window is followed) or else from $COLUMNS; 0 when neither says.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		var ws struct{ rows, cols, x, y uint16 }
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
		if errno == 0 && ws.cols > 0 {
			return int(ws.cols)
		}
	}
	n, _ := strconv.Atoi(os.Getenv("COLUMNS"))
	return max(n, 0)
}

// isTerminal reports whether w is a character device, such as an interactive terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
