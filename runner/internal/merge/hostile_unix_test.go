//go:build unix

package merge

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestMergeRefusesANamedPipe checks that a named pipe in the place of a shard's file is
// refused at once, naming the file, where opening it would block until a writer came. The
// deadline only turns a merge that blocks forever into a failure.
func TestMergeRefusesANamedPipe(t *testing.T) {
	for _, name := range []string{results.ManifestFile, results.RequestsFile, results.EventsFile} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t)
			shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
			path := filepath.Join(shards[0], name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skipf("cannot make a named pipe here: %v", err)
			}
			out := filepath.Join(t.TempDir(), "merged")
			done := make(chan error, 1)
			go func() {
				_, err := Folders(out, shards, Options{})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), name+" is not a regular file") {
					t.Errorf("merge of a shard whose %s is a named pipe: %v, want it refused naming the file", name, err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("merge of a shard whose %s is a named pipe is still blocked", name)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the refused merge left %s", out)
			}
		})
	}
}
