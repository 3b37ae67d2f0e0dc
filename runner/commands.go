package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

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
		{"export", "write a result folder as Parquet, or print Kubernetes or Slurm jobs for shards", cmdExport},
		{"merge", "merge the result folders of a sharded run into one", cmdMerge},
		{"sim", "serve the simulated vLLM-compatible server", cmdSim},
		{"version", "print the runner version", cmdVersion},
		{"tinymodel", "write a tiny random llama GGUF model for engine tests", cmdTinyModel},
		{"help", "show help for a command", nil},
	}
}

// dispatch dispatches the command line to a subcommand. A first argument that is not a subcommand is
// an experiment file: `runner FILE` is `runner run FILE`.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return &exitError{code: 2}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			return dispatch(ctx, []string{args[1], "--help"}, stdout, stderr)
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
