package merge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestMergeIntoAnEmptyFolder checks that an existing empty folder is a valid place to merge
// into, as docs/fleet.md says: the merged folder takes its place.
func TestMergeIntoAnEmptyFolder(t *testing.T) {
	f := newFleet(t)
	shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
	out := filepath.Join(t.TempDir(), "merged")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Folders(out, shards, Options{}); err != nil {
		t.Fatalf("merge into an existing empty folder: %v", err)
	}
	if _, err := results.ReadAll(out); err != nil {
		t.Errorf("the merged folder does not read: %v", err)
	}
}

// TestMergeSymlinkedLogs checks the logs that are symbolic links: one to a regular file
// inside the shard folder is copied from its target; one that leads out of the folder is left
// out with a note, and its boot names no log. No row of the merged servers.csv names a log
// the merged folder lacks.
func TestMergeSymlinkedLogs(t *testing.T) {
	f := newFleet(t)
	shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
	outside := filepath.Join(t.TempDir(), "private.txt")
	writeFileT(t, outside, "not part of any result folder\n")
	var inside string
	for i, d := range shards[:2] {
		m, err := results.ReadManifest(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Servers) == 0 || m.Servers[0].LogFile == "" {
			t.Fatalf("shard %d has no server log to link", i)
		}
		log := filepath.Join(d, filepath.FromSlash(m.Servers[0].LogFile))
		target := outside
		if i == 0 {
			target = filepath.Join(d, "moved.log")
			inside = string(readFile(t, log))
			if err := os.Rename(log, target); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, log); err != nil {
			t.Skipf("cannot make a symbolic link here: %v", err)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Folders(out, shards, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := r.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var copied, blank int
	for _, s := range servers {
		if s.LogFile == "" {
			blank++
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(s.LogFile)))
		if err != nil {
			t.Errorf("servers.csv names %s, which the merged folder lacks: %v", s.LogFile, err)
		}
		if *s.Shard == 0 && string(b) == inside {
			copied++
		}
		if strings.Contains(string(b), "not part of any result folder") {
			t.Errorf("%s holds the file outside the shard folder", s.LogFile)
		}
	}
	if copied == 0 || blank != 1 {
		t.Errorf("servers: %d logs copied from a link inside the shard, %d naming no log; want at least 1 and 1", copied, blank)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "outside the shard folder") }) {
		t.Errorf("notes %q do not say that a log was left out", rep.Notes)
	}
}
