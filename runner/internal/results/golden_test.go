package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// checkGolden compares got with testdata/<name>, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended)\n got:\n%s\nwant:\n%s",
			name, got, want)
	}
}

// TestHeadersGolden pins every file's columns and their kinds: a change here is a change of
// the format, and needs a new FormatVersion unless it only adds columns at the end.
func TestHeadersGolden(t *testing.T) {
	_, configs := testExperiment()
	var b strings.Builder
	for _, f := range []struct {
		name string
		cols []Column
	}{
		{ConfigsFile, ConfigsCSV.ColumnsOf(ConfigRows(configs))},
		{RequestsFile, RequestsCSV.Columns()},
		{EventsFile, EventsCSV.Columns()},
		{ServersFile, ServersCSV.Columns()},
		{SummaryFile, SummaryCSV.Columns()},
		{LoadFile, LoadCSV.ColumnsOf(nil)},
		{TelemetryFile, TelemetryCSV.Columns()},
		{LoadServerFile, LoadServerCSV.Columns()},
		{LoadFile + " with " + LoadServerFile, LoadCSV.Columns()},
	} {
		var names []string
		for _, c := range f.cols {
			names = append(names, c.Name)
		}
		fmt.Fprintf(&b, "%s\n%s\n", f.name, strings.Join(names, ","))
		for _, c := range f.cols {
			fmt.Fprintf(&b, "  %-24s %s\n", c.Name, c.Kind)
		}
	}
	checkGolden(t, "headers.golden", []byte(b.String()))
}

// TestFolderGolden writes a small folder and compares every file with testdata/folder/. The
// manifest's process id, host and end time differ between runs; they are normalised first.
func TestFolderGolden(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	var names []string
	err := filepath.WalkDir(f.Dir(), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(f.Dir(), path)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	want := []string{ConfigsFile, SchemaFile, ErrorsFile, EventsFile, LoadFile, "logs/s0-77aa.log", ManifestFile, OutputsFile, RequestsFile,
		ServersFile, SummaryFile}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("folder holds %q, want %q", names, want)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(f.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if name == ManifestFile {
			b = normaliseManifest(t, b)
		}
		checkGolden(t, filepath.Join("folder", name), b)
	}
}

func normaliseManifest(t *testing.T, b []byte) []byte {
	m, err := decodeManifest(b, ManifestFile)
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Hour)
	m.End, m.Process = &end, Process{PID: 4242, Host: "bench-1"}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// The configs are stored as package experiment types them, which grows with that package;
	// the golden file pins only their ids, labels and axes (TestFolderRoundTrip checks the rest).
	var generic map[string]any
	if err := json.Unmarshal(out, &generic); err != nil {
		t.Fatal(err)
	}
	var configs []any
	for _, c := range m.Configs {
		configs = append(configs, map[string]any{"ID": c.ID, "ServerID": c.ServerID, "Label": c.Label,
			"Index": c.Index, "Axes": c.Axes, "Server.Args": c.Server.Args, "Server.Env": c.Server.Env})
	}
	generic["configs"] = configs
	out, err = json.MarshalIndent(generic, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestGoldenFolderReads checks that the committed folder, written by an earlier build, still
// reads: old folders in results/ must stay readable.
func TestGoldenFolderReads(t *testing.T) {
	r, err := Open(filepath.Join("testdata", "folder"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := r.Requests()
	if err != nil {
		t.Fatal(err)
	}
	_, configs := testExperiment()
	if len(reqs) != 16 || reqs[15].ConfigID != configs[1].ID || len(reqs[0].EventList) != 18 {
		t.Errorf("golden folder: %d requests", len(reqs))
	}
	if r.Status() != StatusComplete {
		t.Errorf("golden folder status %q", r.Status())
	}
}
