package merge

import (
	"os"
	"path/filepath"
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
