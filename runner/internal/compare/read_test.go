package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestReadLeavesEventsUnread: a comparison needs the figures of each request, not its events,
// so Read never reads events.csv, the largest file of a folder: it compares a folder whose
// events.csv cannot be read (a directory in its place) as it compares the intact folder.
func TestReadLeavesEventsUnread(t *testing.T) {
	configs := testConfigs(6, label(0), label(1))
	shifted := baseDist
	shifted.ttft *= 1.25
	root := t.TempDir()
	oldDir := sideSpec{configs: configs, env: baseEnv, seed: 1}.write(t, filepath.Join(root, "old"))
	newDir := sideSpec{configs: configs, env: baseEnv, seed: 2, dists: map[string]dist{label(1): shifted}}.write(t, filepath.Join(root, "new"))
	read := func() *Report {
		t.Helper()
		old, err := Read(oldDir)
		if err != nil {
			t.Fatal(err)
		}
		nw, err := Read(newDir)
		if err != nil {
			t.Fatal(err)
		}
		return mustCompare(t, old, nw, Options{})
	}
	want := read()
	path := filepath.Join(newDir, results.EventsFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	got := read()
	if g, w := encoded(t, got), encoded(t, want); g != w {
		t.Errorf("comparison without events:\n%s\nwant\n%s", g, w)
	}
	if r := row(t, got, label(1), "ttft_ms"); r.Verdict != Worse {
		t.Errorf("ttft_ms of %s: %s, want worse", label(1), r.Verdict)
	}
}

// encoded is the report as JSON.
func encoded(t *testing.T, rep *Report) string {
	t.Helper()
	var buf bytes.Buffer
	enc, err := NewEncoder("json", &buf)
	if err == nil {
		err = enc.Encode(rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
