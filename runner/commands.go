package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// subcommands are, by command, the first arguments that name a command of their own, such as
// export's kubernetes: its errors read "export kubernetes: ...".
var subcommands = map[string][]string{"export": {"kubernetes", "slurm"}}

// nameIn is the name of the command that args run: c's, followed by its subcommand's when
// args begin with one.
func (c command) nameIn(args []string) string {
	if len(args) > 0 && slices.Contains(subcommands[c.name], args[0]) {
		return c.name + " " + args[0]
	}
	return c.name
}

// commandError puts the name of the command that failed before the message of err, so that
// every error reads "runner: COMMAND: ..." (docs/architecture.md, Errors). It is the one place
// that names the command: an error keeps its exit status and identity (errors.Is and errors.As
// still see through it), each line of an errorLines gets the name, and an experiment file's
// problems, located as FILE:LINE:COL, stand alone. A nil error, or an exitError with nothing
// more to say, is returned as it is.
func commandError(name string, err error) error {
	switch e := err.(type) {
	case nil, experiment.ErrorList:
		return err
	case *exitError:
		if e.err == nil {
			return e
		}
		return &exitError{code: e.code, err: commandError(name, e.err)}
	case errorLines:
		lines := make(errorLines, len(e))
		for i, x := range e {
			lines[i] = commandError(name, x)
		}
		return lines
	}
	// An exit status deeper in the chain is kept; stderr shows that error's own message, as
	// exitCode does.
	var ex *exitError
	if errors.As(err, &ex) {
		return commandError(name, ex)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"run", "run an experiment file (the default: runner FILE)", cmdRun},
		{"validate", "check experiment files against the schema and the semantic rules", cmdValidate},
		{"plan", "show the configs an experiment expands to, without running it", cmdPlan},
		{"doctor", "check that this install of the experiment's engines behaves as the runner relies on", cmdDoctor},
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
// an experiment file when it ends in .yaml or .yml or names an existing file: `runner FILE` is
// `runner run FILE`.
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
			return commandError(c.nameIn(args[1:]), c.run(ctx, args[1:], stdout, stderr))
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || exists(name) {
		return commandError("run", cmdRun(ctx, args, stdout, stderr))
	}
	return usageError("no command %s, and no file %s (run 'runner help' for the commands)", name, name)
}

// exists reports whether a path names something on disk, so that `runner FILE` runs an
// experiment file whatever its extension (base.exp), and a name that is neither a command nor
// a file is reported as both.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
