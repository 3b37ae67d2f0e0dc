package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDispatchNameNeitherCommandNorFile: a first argument that is no command is an experiment
// file when it names a file, whatever its extension; when it names neither, the error says so
// of both.
func TestDispatchNameNeitherCommandNorFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "base.exp")
	_, errOut, code := runCmd(t, missing)
	want := "runner: no command " + missing + ", and no file " + missing + " (run 'runner help' for the commands)\n"
	if code != 2 || errOut != want {
		t.Errorf("missing file: exit %d, stderr %q; want exit 2, %q", code, errOut, want)
	}
	_, errOut, code = runCmd(t, "sumary")
	if want := "runner: no command sumary, and no file sumary (run 'runner help' for the commands)\n"; code != 2 || errOut != want {
		t.Errorf("typo: exit %d, stderr %q; want exit 2, %q", code, errOut, want)
	}

	src, err := os.ReadFile(filepath.Join("..", "experiments", "sim-smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(missing, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(t, missing, "--dry-run")
	if code != 0 || !strings.Contains(out+errOut, "sim-smoke") {
		t.Errorf("existing file without .yaml: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
