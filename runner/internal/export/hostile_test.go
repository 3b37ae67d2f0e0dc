package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestParquetLineOverTheCap checks that a CSV line longer than results.MaxLineBytes ends the
// export with an error that names the file, the line and the cap. The line is written a chunk
// at a time, never held whole.
func TestParquetLineOverTheCap(t *testing.T) {
	dir := writeFolder(t, true)
	path := filepath.Join(dir, results.RequestsFile)
	head, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(head[:bytes.IndexByte(head, '\n')+1])
	chunk := bytes.Repeat([]byte("1"), 1<<20)
	for n := 0; n <= results.MaxLineBytes; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString("\n")
	f.Close()
	_, err = Parquet(dir, filepath.Join(t.TempDir(), "out"))
	var capped *results.LineCapError
	if !errors.As(err, &capped) || !strings.Contains(err.Error(), "requests.csv:2: a line longer than the cap of 16 MiB") {
		t.Errorf("export of a requests.csv with a line over the cap: %v", err)
	}
}
