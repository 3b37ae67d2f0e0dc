package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readBounded runs ReadFile in the background and fails the test if it has not returned by a
// generous deadline: a reader that blocks on a pipe or reads an endless device never returns.
func readBounded(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("ReadFile(%s) did not return: it reads more than the size limit, or blocks", path)
		return nil
	}
}

func TestReadFileRefusesADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	err := readBounded(t, "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero") || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v, want an error naming /dev/zero as not a regular file", err)
	}
}

func TestReadFileRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	err := readBounded(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v, want an error naming the pipe as not a regular file", err)
	}
}

func TestReadFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte(head + "description: " + strings.Repeat("x", maxFileSize) + "\n")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	err := readBounded(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "limit of 1 MiB") {
		t.Fatalf("got %v, want an error naming the file and the limit", err)
	}
}
