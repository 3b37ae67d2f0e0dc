package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// unreadableEvents replaces the folder's events.csv with a directory of that name, which can be
// opened but not read: a reader that reads events.csv fails on it.
func unreadableEvents(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, results.EventsFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestReadDigestAgreesWithReadAll: a folder read one request at a time into a Digest has the
// summary, load points and notes of the folder read whole, and every request's error text, but
// no events and no generated text.
func TestReadDigestAgreesWithReadAll(t *testing.T) {
	sweep := resultstest.Sweep{Prompts: []int{32, 64}, Outputs: []int{4, 8}, A: 10, B: 0.1, C0: 5, CP: 0.01,
		Chunk: []float64{0.5, 0.5}, Fail: [2]int{1, 3}, Seed: 4}
	dir := sweep.Write(t, t.TempDir())
	whole, err := results.ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := results.ReadDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if digest.Requests != nil || digest.Digest == nil {
		t.Fatalf("ReadDigest: %d requests, digest %v; want none and a digest", len(digest.Requests), digest.Digest)
	}
	// NaN is no DeepEqual of itself: the rows are compared as printed.
	if got, want := fmt.Sprintf("%+v", digest.Digest.Summary()), fmt.Sprintf("%+v", results.Summarize(whole.Manifest.Configs, whole.Requests)); got != want {
		t.Errorf("summary:\n got %s\nwant %s", got, want)
	}
	if got, want := fmt.Sprintf("%+v", digest.Digest.Load()), fmt.Sprintf("%+v", results.SummarizeLoad(whole.Manifest.Configs, whole.Requests)); got != want {
		t.Errorf("load:\n got %s\nwant %s", got, want)
	}
	if !reflect.DeepEqual(digest.Notes, whole.Notes) || !reflect.DeepEqual(digest.Servers, whole.Servers) {
		t.Errorf("notes %q, servers %+v; want %q, %+v", digest.Notes, digest.Servers, whole.Notes, whole.Servers)
	}

	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	err = r.EachRequest(func(q *record.Request) error {
		w := whole.Requests[i]
		if q.ConfigID != w.ConfigID || q.Seq != w.Seq || q.Error != w.Error || q.EventList != nil || q.OutputText != "" {
			t.Errorf("row %d: %s-%d error %q, %d events, text %q; want %s-%d error %q, no events, no text",
				i, q.ConfigID, q.Seq, q.Error, len(q.EventList), q.OutputText, w.ConfigID, w.Seq, w.Error)
		}
		i++
		return nil
	})
	if err != nil || i != len(whole.Requests) {
		t.Errorf("EachRequest: %d rows, %v; want %d rows", i, err, len(whole.Requests))
	}
}

// TestReadDigestLeavesEventsUnread: the summary and comparisons of a folder do not need its
// events, so reading their figures never opens events.csv, the largest file of a folder (tens
// of events per request): it reads a folder whose events.csv cannot be read.
func TestReadDigestLeavesEventsUnread(t *testing.T) {
	sweep := resultstest.Sweep{Prompts: []int{32, 64}, Outputs: []int{4}, A: 10, B: 0.1, C0: 5, CP: 0.01,
		Chunk: []float64{1}, Seed: 5}
	dir := sweep.Write(t, t.TempDir())
	unreadableEvents(t, dir)
	if _, err := results.ReadAll(dir); err == nil {
		t.Fatal("ReadAll reads a folder whose events.csv is a directory; the test proves nothing")
	}
	l, err := results.ReadDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Digest.Summary()); n == 0 {
		t.Error("no summary rows")
	}
}
