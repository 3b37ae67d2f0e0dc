package summary

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// TestReadLeavesEventsUnread: a summary needs the figures of each request, not its events, so
// Read never reads events.csv, the largest file of a folder: it summarises a folder whose
// events.csv cannot be read (a directory in its place), with the rows, fits and dead configs
// of the intact folder.
func TestReadLeavesEventsUnread(t *testing.T) {
	sweep := resultstest.Sweep{Prompts: []int{32, 64}, Outputs: []int{4, 8}, A: 10, B: 0.1, C0: 5, CP: 0.01,
		Chunk: []float64{1}, Fail: [2]int{1, 3}, Seed: 6}
	dir := sweep.Write(t, t.TempDir())
	want, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, results.EventsFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatalf("Read of a folder whose events.csv cannot be read: %v", err)
	}
	var enc [2]bytes.Buffer
	for i, rep := range []*Report{got, want} {
		if err := NewJSONEncoder(&enc[i]).Encode(rep); err != nil {
			t.Fatal(err)
		}
	}
	if enc[0].String() != enc[1].String() {
		t.Errorf("summary without events:\n%s\nwant\n%s", enc[0].String(), enc[1].String())
	}
	if got.Requests != 24 || got.Failed != 1 || len(got.Fits) != 1 || !got.Fits[0].Prefill.OK() {
		t.Errorf("%d requests, %d failed, fits %+v; want 24, 1 and a prefill fit", got.Requests, got.Failed, got.Fits)
	}
}
