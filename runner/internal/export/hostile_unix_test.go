//go:build unix

package export

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestParquetRefusesANamedPipe checks that a named pipe in the place of a folder's file is
// refused at once, naming the file, where opening it would block until a writer came. The
// deadline only turns a read that blocks forever into a failure.
func TestParquetRefusesANamedPipe(t *testing.T) {
	for _, name := range []string{results.ManifestFile, results.RequestsFile, results.ServersFile} {
		t.Run(name, func(t *testing.T) {
			dir := writeFolder(t, true)
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skipf("cannot make a named pipe here: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Parquet(dir, filepath.Join(t.TempDir(), "out"))
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), name+" is not a regular file") {
					t.Errorf("export of a folder whose %s is a named pipe: %v, want it refused naming the file", name, err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("export of a folder whose %s is a named pipe is still blocked", name)
			}
		})
	}
}
