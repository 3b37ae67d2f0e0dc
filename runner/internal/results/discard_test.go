package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// TestDiscardPartialLoadPoint resumes a folder whose second config was cut short, discards
// that config's rows, and runs it again: its old rows are under discarded/, byte for byte, the
// manifest says so, and the folder reads as if the config had run once, whole.
func TestDiscardPartialLoadPoint(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	all := plan(configs) // 8 requests per config
	partial := append([]record.Request(nil), all[:11]...)
	partial[9] = failedRequest(configs[1], 1) // an error text in errors.jsonl
	for _, r := range partial {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	f.abandon()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := map[string][]byte{}
	for _, name := range []string{RequestsFile, EventsFile, OutputsFile, ErrorsFile} {
		before[name] = read(name)
	}

	g, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if done.Count(configs[1].ID) != 3 {
		t.Fatalf("resume found %d requests of config 1", done.Count(configs[1].ID))
	}
	done, err = g.Discard([]string{configs[1].ID}, "partial load point")
	if err != nil {
		t.Fatal(err)
	}
	if done.Count(configs[1].ID) != 0 || done.Count(configs[0].ID) != 8 || done.Len() != 8 {
		t.Fatalf("after discard: %d and %d requests", done.Count(configs[0].ID), done.Count(configs[1].ID))
	}
	// Every byte is either kept or moved: the kept rows and the moved rows (headers aside)
	// make up the file as it was.
	for name, was := range before {
		kept, moved := read(name), read(filepath.Join(DiscardedDir, name))
		if strings.HasSuffix(name, ".csv") {
			header := was[:bytes.IndexByte(was, '\n')+1]
			if !bytes.HasPrefix(moved, header) || !bytes.HasPrefix(kept, header) {
				t.Errorf("%s: the kept or the moved file lacks the header", name)
			}
			moved = moved[len(header):]
		}
		if len(moved) == 0 && name != OutputsFile {
			t.Errorf("%s: nothing moved", name)
		}
		if len(kept)+len(moved) != len(was) || bytes.Contains(kept, []byte(configs[1].ID+"-")) {
			t.Errorf("%s: %d kept + %d moved bytes, was %d", name, len(kept), len(moved), len(was))
		}
	}
	m := g.Manifest()
	if len(m.Discarded) != 1 || m.Discarded[0].ConfigID != configs[1].ID || m.Discarded[0].Rows != 3 ||
		m.Discarded[0].Reason != "partial load point" || m.Discarded[0].Time.IsZero() {
		t.Errorf("manifest discarded %+v", m.Discarded)
	}

	// The config runs again from its first request; the handles append to the new files.
	for _, r := range all[8:] {
		if err := g.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 16 || got[9].Status != "ok" {
		t.Errorf("folder holds %d requests after the rerun", len(got))
	}
	man, err := ReadManifest(dir)
	if err != nil || len(man.Discarded) != 1 {
		t.Errorf("manifest on disk: %v, %+v", err, man)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := r.StoredSummary(); err != nil || sum[len(plainMetrics())].N != 6 {
		t.Errorf("summary of the rerun config: %v", err)
	}
}

// TestDiscardAppends discards twice: the second discard appends to discarded/ without a
// second header, and an unknown config is refused.
func TestDiscardAppends(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	defer f.abandon()
	all := plan(configs)
	for round := 0; round < 2; round++ {
		for _, r := range all[:3] {
			if err := f.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.Discard([]string{configs[0].ID, configs[0].ID}, "partial"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.Dir(), DiscardedDir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b, []byte("\n")); lines != 1+6 || bytes.Count(b, []byte("schema_version")) != 1 {
		t.Errorf("discarded/requests.csv has %d lines:\n%s", lines, b)
	}
	if m := f.Manifest(); len(m.Discarded) != 2 {
		t.Errorf("manifest discarded %+v", m.Discarded)
	}
	if _, err := f.Discard([]string{"nope"}, "x"); err == nil || !strings.Contains(err.Error(), `unknown config id "nope"`) {
		t.Errorf("discard of an unknown config: %v", err)
	}
}
