package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsNameTheCommandOnce runs commands on bad input and checks what stderr shows as
// docs/architecture.md (Errors) says: "runner: COMMAND: ...", the command named once, and no
// part of the chain repeating the one before it.
func TestErrorsNameTheCommandOnce(t *testing.T) {
	dir := t.TempDir()
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, []byte("not a folder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	// endpoint.yaml's server takes its key from this variable; set, the run gets as far as
	// creating its folder.
	t.Setenv("RUNNER_TEST_KEY", "test-key")
	tests := []struct {
		cmd  string
		args []string
	}{
		{"run", []string{"run", filepath.Join("testdata", "plan", "endpoint.yaml"), "--results", filepath.Join(afile, "x")}},
		{"run", []string{filepath.Join(dir, "missing.yaml")}},
		{"run", []string{"run", filepath.Join("testdata", "plan", "endpoint.yaml"), "--resume", missing}},
		{"validate", []string{"validate", filepath.Join(dir, "missing.yaml")}},
		{"plan", []string{"plan", filepath.Join("testdata", "plan", "sweep.yaml"), "--shards", "0"}},
		{"summary", []string{"summary", missing}},
		{"diff", []string{"diff", missing, missing}},
		{"report", []string{"report", missing}},
		{"export", []string{"export", "parquet", missing}},
		{"export kubernetes", []string{"export", "kubernetes"}},
		{"merge", []string{"merge", missing}},
		{"sim", []string{"sim", "--fault", "bogus"}},
		{"tinymodel", []string{"tinymodel"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := runCmd(t, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want a failure; stderr %q", stderr)
			}
			var msg string
			for _, line := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(line, "runner: ") {
					msg = strings.TrimPrefix(line, "runner: ")
					break
				}
			}
			if !strings.HasPrefix(msg, tt.cmd+": ") {
				t.Fatalf("stderr %q: want a line starting %q", stderr, "runner: "+tt.cmd+": ")
			}
			t.Log(msg)
			segs := strings.Split(msg, ": ")
			for i, s := range segs {
				if i > 0 && s == tt.cmd {
					t.Errorf("%q names the command %q again", msg, tt.cmd)
				}
				if i > 0 && s == segs[i-1] {
					t.Errorf("%q repeats %q", msg, s)
				}
			}
		})
	}
}
