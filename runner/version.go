package main

import (
	"context"
	"fmt"
	"io"
)

func cmdVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "runner version", "Print the runner version and the commit it was built from.", stderr)
	if helped, err := parseFlags(fs, args); helped || err != nil {
		return err
	}
	v, c := buildInfo()
	if c != "" {
		v += " (" + c + ")"
	}
	_, err := fmt.Fprintf(stdout, "runner %s\n", v)
	return err
}
