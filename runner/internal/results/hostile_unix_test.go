//go:build unix

package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// safetyDeadline bounds a read that must end at once because it is refused: it only turns a
// read that blocks forever into a failure, and never judges speed.
const safetyDeadline = 2 * time.Minute

// finishes runs fn and fails t if fn has not returned within the safety deadline: a reader
// that opens a named pipe blocks until a writer comes, which in a test is never.
func finishes(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(safetyDeadline):
		t.Fatalf("%s: still blocked after %v: it opened a named pipe", what, safetyDeadline)
		return nil
	}
}

// replaceWithFIFO replaces the file path with a named pipe that no one writes.
func replaceWithFIFO(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
}

// interruptedFolder writes a folder as a killed run leaves it, with one request.
func interruptedFolder(t *testing.T) string {
	t.Helper()
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	f.abandon()
	return f.Dir()
}

func TestReadersRefuseANamedPipe(t *testing.T) {
	for _, name := range []string{ManifestFile, RequestsFile, EventsFile, OutputsFile, SchemaFile} {
		t.Run(name, func(t *testing.T) {
			complete, _ := writeFolder(t, t.TempDir())
			dir := complete.Dir()
			replaceWithFIFO(t, filepath.Join(dir, name))
			read := func() error {
				if name == SchemaFile {
					_, err := ReadSchema(dir)
					return err
				}
				_, err := ReadAll(dir)
				return err
			}
			err := finishes(t, "read "+name, read)
			if err == nil || !strings.Contains(err.Error(), name+" is not a regular file (it is a named pipe)") {
				t.Errorf("read of a folder whose %s is a named pipe: %v, want it refused naming the file", name, err)
			}
			dir = interruptedFolder(t)
			replaceWithFIFO(t, filepath.Join(dir, name))
			err = finishes(t, "resume", func() error {
				f, _, err := Resume(dir)
				if err == nil {
					f.abandon()
				}
				return err
			})
			if name != SchemaFile && (err == nil || !strings.Contains(err.Error(), "is not a regular file")) {
				t.Errorf("resume of a folder whose %s is a named pipe: %v, want it refused", name, err)
			}
		})
	}
}

// TestReadersRefuseADevice checks that a link to /dev/zero in the place of a folder's file is
// refused as what it is, where reading it would never end.
func TestReadersRefuseADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	for _, name := range []string{ManifestFile, RequestsFile, OutputsFile} {
		complete, _ := writeFolder(t, t.TempDir())
		path := filepath.Join(complete.Dir(), name)
		os.Remove(path)
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Skipf("cannot make a symbolic link here: %v", err)
		}
		_, err := ReadAll(complete.Dir())
		if err == nil || !strings.Contains(err.Error(), name+" is not a regular file (it is a character device)") {
			t.Errorf("read of a folder whose %s links to /dev/zero: %v", name, err)
		}
	}
}
