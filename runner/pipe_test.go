package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestRunStdoutClosed runs the built binary with its stdout a pipe whose reading end is
// already closed, as `runner run x.yaml | head -1` leaves it once head has its line: the run
// must not die of SIGPIPE at its first write there, but finish, write its whole folder, drop
// what stdout would have shown, say so on stderr and exit 0.
func TestRunStdoutClosed(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("pipe-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--decode-per-token", "1ms"`, 1))
	root := filepath.Join(dir, "results")

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // no reader: every write to stdout meets a broken pipe
	cmd := exec.Command(bin, file, "--results", root)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("exit %v (%s); want 0\nstderr:\n%s", err, ee.ProcessState, stderr.String())
	} else if err != nil {
		t.Fatal(err)
	}
	checkNoSurvivors(t, marker)
	if !strings.Contains(stderr.String(), "standard output is closed") {
		t.Errorf("stderr does not say that stdout's output was dropped:\n%s", stderr.String())
	}
	folder := onlyFolder(t, root, "e2e")
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != results.StatusComplete {
		t.Errorf("manifest status %s, want complete", man.Status)
	}
	if n := len(readRequests(t, folder)); n != 1+2*(1+1) {
		t.Errorf("%d requests, want 5", n)
	}
	if _, err := os.Stat(filepath.Join(folder, results.SummaryFile)); err != nil {
		t.Error(err)
	}
}
