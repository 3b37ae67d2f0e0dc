package main

import "runtime/debug"

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
