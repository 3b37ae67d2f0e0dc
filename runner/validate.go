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
)

const validateDescription = `
Check experiment files against the JSON Schema (schema/experiment.schema.json) and the rules a
schema cannot express: unknown or misplaced fields, matrix axes that name no field, empty or
repeated axes and values, and, for every config the matrix expands to, that prompt_tokens +
max_tokens fits max_model_len and that every field applies to the config's engine.

Every problem of every file is printed, one per line, as FILE:LINE:COLUMN: FIELD: MESSAGE. The
exit status is 0 when all files are valid and 2 when any is not.`

// cmdValidate checks experiment files and reports every problem at once.
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", "runner validate FILE...", validateDescription, stderr)
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError("validate: no experiment file given (usage: runner validate FILE...)")
	}
	var problems []string
	bad := 0
	for _, f := range files {
		cfgs, err := loadConfigs(f)
		if err != nil {
			bad++
			problems = append(problems, err.Error())
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (%s, %s)\n", f, plural(len(cfgs), "config"), plural(countServers(cfgs), "server"))
	}
	if bad == 0 {
		return nil
	}
	if len(files) > 1 {
		problems = append(problems, fmt.Sprintf("runner: validate: %d of %d files are invalid", bad, len(files)))
	}
	return &exitError{code: 2, msg: strings.Join(problems, "\n")}
}

// loadConfigs loads, checks and expands one experiment file. A file that cannot be read is
// reported with the runner's prefix; an invalid one as its list of located problems.
func loadConfigs(file string) ([]experiment.Config, error) {
	e, err := experiment.Load(file)
	if err == nil {
		var cfgs []experiment.Config
		if cfgs, err = e.Expand(); err == nil {
			return cfgs, nil
		}
	}
	var list experiment.ErrorList
	if errors.As(err, &list) {
		return nil, list
	}
	return nil, fmt.Errorf("runner: %w", err)
}

// countServers counts the distinct server configs.
func countServers(cfgs []experiment.Config) int {
	seen := map[string]bool{}
	for _, c := range cfgs {
		seen[c.ServerID] = true
	}
	return len(seen)
}

// plural formats a count with a noun, adding an s unless the count is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
