package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// hostileBody is an error body that would take over a terminal printed as it is: clear the
// screen, set the window title, colour the text, a C1 control sequence introducer, and a
// carriage return that would overwrite the line.
const hostileBody = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\rover"

// controlAt returns the index of the first control character of s other than a newline, a tab
// or the progress line's own redraw, or -1.
func controlAt(s string) int {
	return strings.IndexFunc(strings.ReplaceAll(s, "\r\x1b[2K", ""), func(r rune) bool {
		return r != '\n' && r != '\t' && (r < 0x20 || (r >= 0x7f && r <= 0x9f))
	})
}

// TestHostileServerText runs an experiment against a server whose error body holds escape
// sequences, and checks that neither the progress lines, nor the summary the run ends with, nor
// runner summary in text or markdown write them to the terminal: they show them escaped.
func TestHostileServerText(t *testing.T) {
	ts := httptest.NewServer(faultServer("hostile-model", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, hostileBody)
	}))
	defer ts.Close()
	dir := t.TempDir()
	file := writeExperiment(t, dir, "hostile", fmt.Sprintf(`
version: 1
name: hostile
server:
  engine: endpoint
  url: %s
  model: hostile-model
request:
  prompt: hello there
  max_tokens: 8
warmup: 0
repetitions: 1
cache: keep
`, ts.URL))
	root := filepath.Join(dir, "results")
	stdout, stderr, code := runCmd(t, file, "--results", root)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the requests failed)\n%s\n%s", code, stdout, stderr)
	}
	folder := onlyFolder(t, root, "hostile")
	outputs := map[string]string{"run's progress (stderr)": stderr, "run's summary (stdout)": stdout}
	for _, format := range []string{"text", "markdown"} {
		out, errOut, code := runCmd(t, "summary", folder, "--format", format)
		if code != 0 {
			t.Fatalf("summary --format %s: exit %d\n%s", format, code, errOut)
		}
		outputs["summary "+format] = out + errOut
	}
	for name, out := range outputs {
		if i := controlAt(out); i >= 0 {
			t.Errorf("%s: a control character reaches the terminal:\n%q", name, out)
		}
		if !strings.Contains(out, `\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m`) {
			t.Errorf("%s: lacks the error text, escaped:\n%s", name, out)
		}
	}
}
