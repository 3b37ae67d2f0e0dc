package results

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLong appends to the file path header, then n bytes of fill (written a chunk at a time,
// never held whole), then tail.
func writeLong(t *testing.T, path, header string, fill byte, n int64, tail string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.WriteString(f, header); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{fill}, 1<<20)
	for n > 0 {
		c := chunk[:min(n, int64(len(chunk)))]
		if _, err := f.Write(c); err != nil {
			t.Fatal(err)
		}
		n -= int64(len(c))
	}
	if _, err := io.WriteString(f, tail); err != nil {
		t.Fatal(err)
	}
}

// TestManifestOverTheCap checks that a manifest larger than its cap is refused by its size,
// naming the file and the cap. The file is sparse: it takes no room and no time to write.
func TestManifestOverTheCap(t *testing.T) {
	complete, _ := writeFolder(t, t.TempDir())
	path := filepath.Join(complete.Dir(), ManifestFile)
	if err := os.Truncate(path, MaxManifestBytes+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(complete.Dir())
	if err == nil || !strings.Contains(err.Error(), ManifestFile+" is larger than the cap of 64 MiB") {
		t.Errorf("Open of a folder whose manifest is over the cap: %v", err)
	}
}

// TestLineOverTheCap checks that a line longer than MaxLineBytes ends every reading of a
// folder with an error that names the file, the line and the cap, whatever the line holds.
func TestLineOverTheCap(t *testing.T) {
	header := string(encodeCSV(RequestsCSV.header()))
	for _, c := range []struct {
		name, file, header string
		fill               byte
		tail               string
	}{
		{"endless CSV line", RequestsFile, header, 'a', "\n"},
		{"quoted cell over many lines", RequestsFile, header + `1,"`, '\n', "\"\n"},
		{"endless JSON line", OutputsFile, "", ' ', "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			complete, _ := writeFolder(t, t.TempDir())
			dir := complete.Dir()
			writeLong(t, filepath.Join(dir, c.file), c.header, c.fill, MaxLineBytes+1, c.tail)
			want := c.file + ":" + map[bool]string{true: "2", false: "1"}[c.header != ""] + ": a line longer than the cap of 16 MiB"
			_, err := ReadAll(dir)
			var capped *LineCapError
			if !errors.As(err, &capped) || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadAll: %v, want %q", err, want)
			}
			markRunning(t, dir)
			f, _, err := Resume(dir)
			if err == nil {
				f.abandon()
			}
			if !errors.As(err, &capped) || !strings.Contains(err.Error(), want) {
				t.Errorf("Resume: %v, want %q", err, want)
			}
		})
	}
}

// markRunning rewrites the folder's manifest as a killed run leaves it, so that Resume takes it.
func markRunning(t *testing.T, dir string) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Status = StatusInterrupted
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}
