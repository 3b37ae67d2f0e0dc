package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version is the runner's version; release builds set it with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// buildInfo returns the version and the VCS revision the binary was built from, if known.
func buildInfo() (ver, commit string) {
	ver = version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return ver, commit
}

func cmdVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "runner version", "Print the runner version and the commit it was built from.", stderr)
	if helped, err := parseFlags(fs, args); helped || err != nil {
		return err
	}
	v, c := buildInfo()
	if c != "" {
		fmt.Fprintf(stdout, "runner %s (%s)\n", v, c)
	} else {
		fmt.Fprintf(stdout, "runner %s\n", v)
	}
	return nil
}
