package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

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

// readExperiment reads, checks and expands an experiment file. It fails with exit status 2:
// with the file's located problems, or with what kept it from being read.
func readExperiment(file string) (*experiment.Experiment, []experiment.Config, error) {
	e, err := experiment.ReadFile(file)
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
	return nil, nil, &exitError{code: 2, err: err}
}

// flagSet reports whether the flag name was given on the command line, for a flag whose
// default cannot be told from a value given.
func flagSet(fs *flag.FlagSet, name string) bool {
	var set bool
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// orList joins names for a flag's help as a sentence does: "text, json or csv".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
