package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// usageError is an error of the command line itself; it exits with status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"run", "run an experiment file (the default: runner FILE)", cmdRun},
		{"validate", "check experiment files against the schema and the semantic rules", cmdValidate},
		{"plan", "show the configs an experiment expands to, without running it", cmdPlan},
		{"summary", "summarise a result folder", cmdSummary},
		{"diff", "compare two result folders and gate CI on regressions", cmdDiff},
		{"report", "write an HTML report with charts for one or two result folders", cmdReport},
		{"export", "write a result folder's CSV files as typed Parquet files", cmdExport},
		{"sim", "serve the simulated vLLM-compatible server", cmdSim},
		{"version", "print the runner version", cmdVersion},
		{"tinymodel", "write a tiny random llama GGUF model for engine tests", cmdTinyModel},
		{"help", "show help for a command", nil},
	}
}

// run dispatches the command line to a subcommand. A first argument that is not a subcommand is
// an experiment file: `runner FILE` is `runner run FILE`.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return &exitError{code: 2}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		return printUsage(stdout)
	case "-version", "--version":
		return cmdVersion(ctx, nil, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return cmdRun(ctx, args, stdout, stderr)
	}
	return usageError("unknown command %q (run 'runner help' for a list)", name)
}

// printUsage writes the command list and returns the first write error.
func printUsage(out io.Writer) error {
	w := tabular.NewErrWriter(out)
	fmt.Fprint(w, `runner measures LLM serving latency (TTFT, TPOT) the way a chat user feels it.

Usage:
  runner FILE [flags]            run an experiment (same as: runner run FILE)
  runner <command> [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'runner <command> --help' for a command's flags.
`)
	return w.Err()
}

// newFlagSet returns a flag set that writes its usage to stderr and reports errors instead of
// exiting, with a usage text made of the synopsis and a description.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n", synopsis, strings.TrimSpace(description))
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args, mapping -h to a nil error with usage printed and any other flag error
// to a usage error (exit 2).
func parseFlags(fs *flag.FlagSet, args []string) (helped bool, err error) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return true, nil
		}
		return false, &exitError{code: 2}
	}
	return false, nil
}

// flagsAndFiles parses flags given before, between or after the file arguments (the flag
// package alone stops at the first file) and returns the files in order. Everything after "--"
// is a file.
func flagsAndFiles(fs *flag.FlagSet, args []string) (files []string, helped bool, err error) {
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	for {
		if helped, err = parseFlags(fs, args); helped || err != nil {
			return nil, helped, err
		}
		if fs.NArg() == 0 {
			return append(files, tail...), false, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// loadExperiment loads, checks and expands an experiment file for the command cmd. It fails
// with exit status 2: with the file's located problems, or with what kept it from being read,
// after cmd when cmd is not empty.
func loadExperiment(cmd, file string) (*experiment.Experiment, []experiment.Config, error) {
	e, err := experiment.Load(file)
	var cfgs []experiment.Config
	if err == nil {
		if cfgs, err = e.Expand(); err == nil {
			return e, cfgs, nil
		}
	}
	var list experiment.ErrorList
	if errors.As(err, &list) {
		return nil, nil, &exitError{code: 2, err: list}
	}
	if cmd != "" {
		err = fmt.Errorf("%s: %w", cmd, err)
	}
	return nil, nil, &exitError{code: 2, err: err}
}
