package results

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// testLoadServer returns the server's figures of a load point of ten requests.
func testLoadServer(configID string, ttftMs float64) LoadServerRow {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
	return LoadServerRow{ConfigID: configID, ServerID: "s0-77aa", Before: t0.Add(time.Minute), After: t0.Add(time.Minute + 3*time.Second),
		LoadServer: LoadServer{Requests: record.Int(10), TTFTMean: ms(ttftMs), E2EMean: ms(ttftMs + 40), QueueMean: ms(2),
			PrefillMean: ms(ttftMs - 2), DecodeMean: ms(40), PromptTokens: record.Int(320), GenerationTokens: record.Int(160),
			CacheQueries: record.Int(320), CacheHits: record.Int(0), ClientOverheadMean: ms(0.75)}}
}

// TestLoadServerFile records the server's figures of one of two load points: load_server.csv
// holds them, load.csv carries them as its last columns (empty for the other load point), the
// data package names the file after load.csv with load.csv's longer header, and the folder
// reads back what was written, stored or computed.
func TestLoadServerFile(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	for _, r := range plan(configs) {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	want := testLoadServer(configs[1].ID, 12.5)
	if err := f.AppendLoadServer(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{LoadServerFile, LoadFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "server/"+name, b)
	}
	files, err := ReadSchema(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range files {
		names = append(names, s.File)
		if s.File == LoadFile && len(s.Columns) != len(LoadCSV.Columns()) {
			t.Errorf("datapackage.json: load.csv has %d columns, want %d", len(s.Columns), len(LoadCSV.Columns()))
		}
	}
	if i := slices.Index(names, LoadServerFile); i < 0 || names[i-1] != LoadFile {
		t.Errorf("datapackage.json names %v, want load_server.csv after load.csv", names)
	}

	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := r.LoadServer()
	if err != nil || len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
		t.Fatalf("load_server.csv read back %+v, %v\nwant %+v", rows, err, want)
	}
	stored, err := r.StoredLoad()
	if err != nil {
		t.Fatal(err)
	}
	computed, err := r.LoadSummary()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored[1].Server, want.LoadServer) || !stored[0].Server.empty() {
		t.Errorf("load.csv server figures %+v and %+v, want none and %+v", stored[0].Server, stored[1].Server, want.LoadServer)
	}
	if s, c := loadCSV(stored, true), loadCSV(computed, true); !bytes.Equal(s, c) {
		t.Errorf("stored load.csv differs from the computed one:\n%s\n%s", s, c)
	}
}

// TestLoadServerRefused refuses a row of a config the folder does not know, and a second row
// of one config: a load point has one pair of scrapes.
func TestLoadServerRefused(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	defer f.abandon()
	tests := []struct {
		row  LoadServerRow
		want string // "" for a row taken
	}{
		{testLoadServer(configs[0].ID, 10), ""},
		{testLoadServer("nope", 10), `unknown config id "nope"`},
		{testLoadServer(configs[0].ID, 11), "already has the load point of config " + configs[0].ID},
		{testLoadServer(configs[1].ID, 12), ""},
	}
	for _, tt := range tests {
		err := f.AppendLoadServer(tt.row)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("append %s: %v, want %q", tt.row.ConfigID, err, tt.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.Dir(), LoadServerFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 3 {
		t.Errorf("load_server.csv has %d lines, want a header and 2 rows:\n%s", n, b)
	}
}

// TestLoadServerDiscardAndResume resumes a folder whose first load point finished (its
// server figures written, then a torn line of a second row) and whose second was cut short
// but had a row all the same: the torn line goes, the discard moves the cut-short load
// point's row to discarded/ with its requests, the rerun writes it again, and the folder
// reads with one row per load point, the rerun's.
func TestLoadServerDiscardAndResume(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	all := plan(configs)
	for _, r := range all[:11] {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, row := range []LoadServerRow{testLoadServer(configs[0].ID, 10), testLoadServer(configs[1].ID, 99)} {
		if err := f.AppendLoadServer(row); err != nil {
			t.Fatal(err)
		}
	}
	f.abandon()
	path := filepath.Join(dir, LoadServerFile)
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteString("1," + configs[1].ID + ",s0-77")
	file.Close()

	g, _, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); bytes.HasSuffix(b, []byte("s0-77")) {
		t.Errorf("resume kept the torn line:\n%s", b)
	}
	if _, err := g.Discard([]string{configs[1].ID}, "partial load point"); err != nil {
		t.Fatal(err)
	}
	moved, err := os.ReadFile(filepath.Join(dir, DiscardedDir, LoadServerFile))
	if err != nil || bytes.Count(moved, []byte("\n")) != 2 || !bytes.Contains(moved, []byte(configs[1].ID)) {
		t.Errorf("discarded/load_server.csv: %v\n%s", err, moved)
	}
	for _, r := range all[8:] {
		if err := g.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	again := testLoadServer(configs[1].ID, 20)
	if err := g.AppendLoadServer(again); err != nil {
		t.Fatalf("the rerun's row: %v", err)
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := r.LoadServer()
	if err != nil || len(rows) != 2 || rows[1].ConfigID != configs[1].ID || *rows[1].TTFTMean != *again.TTFTMean {
		t.Fatalf("load_server.csv after the rerun: %+v, %v", rows, err)
	}
	load, err := r.StoredLoad()
	if err != nil || len(load) != 2 || load[1].Server.TTFTMean == nil || *load[1].Server.TTFTMean != *again.TTFTMean {
		t.Errorf("load.csv after the rerun: %+v, %v", load, err)
	}
}

// TestLoadServerTwiceRefusedOnRead: a load_server.csv that describes one load point twice
// (which no writer of this format produces) is an error, not a silent pick.
func TestLoadServerTwiceRefusedOnRead(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	var buf bytes.Buffer
	e := LoadServerCSV.NewEncoder(&buf)
	for range 2 {
		row := testLoadServer("c0-9f3a", 10)
		if err := e.Encode(&row); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.Dir(), LoadServerFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.LoadServer(); err == nil || !strings.Contains(err.Error(), "load_server.csv:3: config c0-9f3a appears twice") {
		t.Errorf("LoadServer = %v", err)
	}
}
