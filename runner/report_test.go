package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/report"
)

// reportFixture is a committed result folder of the report package, written by its tests.
func reportFixture(name string) string {
	return filepath.Join("internal", "report", "testdata", name)
}

// copyFolder copies a result folder to a temporary one, so that a report can be written into it.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReportCommand(t *testing.T) {
	t.Run("default output", func(t *testing.T) {
		dir := copyFolder(t, reportFixture("new"))
		stdout, stderr, code := runCmd(t, "report", dir)
		want := "wrote " + filepath.Join(dir, "report", "index.html") + " (7 charts as PNG and SVG, fits.csv)\n"
		if code != 0 || stdout != want || stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
		}
		for _, name := range append(report.ChartNames(), "index", "fits") {
			matches, _ := filepath.Glob(filepath.Join(dir, "report", name+".*"))
			if len(matches) == 0 {
				t.Errorf("no %s.* in %s/report", name, dir)
			}
		}
	})
	t.Run("two folders, -o after them", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "cmp")
		stdout, stderr, code := runCmd(t, "report", reportFixture("old"), reportFixture("new"), "-o", out)
		if code != 0 || !strings.HasPrefix(stdout, "wrote "+filepath.Join(out, "index.html")) || stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		page, err := os.ReadFile(filepath.Join(out, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "old: old") || !strings.Contains(string(page), "new: new") {
			t.Errorf("the page does not name both folders")
		}
		if _, err := os.Stat(filepath.Join(reportFixture("new"), "report")); !os.IsNotExist(err) {
			t.Errorf("-o was not honoured: the committed folder got a report/ (%v)", err)
		}
	})
}

func TestReportUsage(t *testing.T) {
	dir := reportFixture("new")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "want one or two result folders, got 0"},
		{[]string{"report", dir, dir, dir}, 2, "want one or two result folders, got 3"},
		{[]string{"report", t.TempDir()}, 2, "not a result folder"},
		{[]string{"report", "--help"}, 0, "Usage: runner report RESULT_DIR [NEW_DIR] [-o OUT_DIR]"},
		{[]string{"report", dir, "-x"}, 2, "flag provided but not defined: -x"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", tt.args, code, stdout+stderr, tt.code, tt.want)
		}
	}
}
