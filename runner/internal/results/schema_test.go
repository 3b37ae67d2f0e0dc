package results

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

func TestSchemaRoundTrip(t *testing.T) {
	_, configs := testExperiment()
	for _, tc := range []struct {
		name string
		rows []ConfigRow
	}{
		{"no configs", nil},
		{"one axis", ConfigRows(configs)},
		{"clashing axis names", []ConfigRow{{ID: "c0", Axes: []experiment.AxisValue{
			{Path: "request.max_tokens", Value: "1"}, {Path: "request_max_tokens", Value: "2"}, {Path: "Server.Args", Value: "x"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := Schema(tc.rows)
			var buf bytes.Buffer
			if err := EncodeSchema(&buf, "sweep", want); err != nil {
				t.Fatal(err)
			}
			got, err := DecodeSchema(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeSchemaRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not json", "{", "datapackage.json"},
		{"other version", `{"schema_version": 7, "resources": []}`, "schema_version 7 is not supported"},
		{"unknown type", `{"schema_version": 1, "resources": [{"path": "a.csv", "schema": {"fields": [{"name": "x", "type": "geopoint"}]}}]}`,
			`unknown type "geopoint"`},
		{"no resources", `{"schema_version": 1, "resources": []}`, "no resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSchema(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeSchema: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestSchemaDescribesTheFolder checks a written folder's schema file against its CSV files:
// it lists each of them, each header is its column list, and a column marked required has a
// value in every row.
func TestSchemaDescribesTheFolder(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	files, err := ReadSchema(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, r.Schema()) {
		t.Errorf("the schema file differs from the one derived from the tables")
	}
	csvs, _ := filepath.Glob(filepath.Join(f.Dir(), "*.csv"))
	if len(csvs) != len(files) {
		t.Errorf("folder has %d CSV files, the schema lists %d", len(csvs), len(files))
	}
	for _, sf := range files {
		file, err := os.Open(filepath.Join(f.Dir(), sf.File))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readCSV(file)
		file.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range sf.Columns {
			names = append(names, c.Name)
		}
		if strings.Join(recs[0], ",") != strings.Join(names, ",") {
			t.Errorf("%s: header %v, schema %v", sf.File, recs[0], names)
		}
		for i, c := range sf.Columns {
			for line, rec := range recs[1:] {
				if _, err := c.Kind.Parse(rec[i]); err != nil {
					t.Errorf("%s:%d: %s: %v", sf.File, line+2, c.Name, err)
				}
				if c.Required && rec[i] == "" {
					t.Errorf("%s:%d: required column %s is empty", sf.File, line+2, c.Name)
				}
			}
		}
	}
}

// TestRequiredColumnsAreNeverEmpty encodes rows whose optional fields are all missing and
// checks that the columns marked required still have a value.
func TestRequiredColumnsAreNeverEmpty(t *testing.T) {
	nan := math.NaN()
	check := func(name string, cols []Column, row []string) {
		t.Helper()
		for i, c := range cols {
			if c.Required && row[i] == "" {
				t.Errorf("%s: required column %s is empty in a row of missing values", name, c.Name)
			}
		}
	}
	check(RequestsFile, RequestsCSV.Columns(), RequestsCSV.row(&record.Request{}))
	check(EventsFile, EventsCSV.Columns(), EventsCSV.row(&EventRow{}))
	check(ServersFile, ServersCSV.Columns(), ServersCSV.row(&ServerInfo{}))
	check(SummaryFile, SummaryCSV.Columns(), SummaryCSV.row(&SummaryRow{Summary: stats.Summary{Min: nan, Median: nan, P95: nan,
		P99: nan, Max: nan, Mean: nan, Stddev: nan, MedianCILow: nan, MedianCIHigh: nan, MedianCILevel: nan}}))
	rows := []ConfigRow{{Axes: []experiment.AxisValue{{Path: "a", Value: "1"}}}, {}}
	check(ConfigsFile, ConfigsCSV.ColumnsOf(rows), configsTable(axisPaths(rows)).row(&rows[1]))
}

// TestFolderWithoutSchemaFile reads a folder written before folders carried the schema file:
// it reads as before, and the description derived from the tables is the one a new folder
// writes. Resuming and closing it writes the file.
func TestFolderWithoutSchemaFile(t *testing.T) {
	root := t.TempDir()
	exp, configs := testExperiment()
	f, err := Create(root, exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	f.abandon()
	written, err := ReadSchema(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.Dir(), SchemaFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSchema(f.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSchema of a folder without the file: %v, want fs.ErrNotExist", err)
	}
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := r.Requests(); err != nil || len(reqs) != 1 {
		t.Errorf("requests of a folder without the schema file: %d, %v", len(reqs), err)
	}
	if !reflect.DeepEqual(r.Schema(), written) {
		t.Errorf("the derived schema differs from the written one")
	}
	g, _, err := Resume(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSchema(f.Dir()); err != nil || !reflect.DeepEqual(got, written) {
		t.Errorf("after resume and close: %v, %v", got, err)
	}
}

func TestKindParse(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		cell string
		want any
		err  bool
	}{
		{KindInt, "", nil, false},
		{KindInt, "-12", int64(-12), false},
		{KindInt, "9223372036854775807", int64(math.MaxInt64), false},
		{KindInt, "1.0", nil, true},
		{KindFloat, "", nil, false},
		{KindFloat, "2.500000", 2.5, false},
		{KindFloat, "NaN", nil, true},
		{KindBool, "true", true, false},
		{KindBool, "True", nil, true},
		{KindTime, "2026-11-29T08:12:00.123456789Z", t0, false},
		{KindTime, "yesterday", nil, true},
		{KindString, `a\nb; c`, `a\nb; c`, false},
		{Kind("decimal"), "1", nil, true},
	} {
		got, err := tc.kind.Parse(tc.cell)
		if (err != nil) != tc.err {
			t.Errorf("%s.Parse(%q): error %v, want error %v", tc.kind, tc.cell, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if tm, ok := tc.want.(time.Time); ok {
			if g, ok := got.(time.Time); !ok || !g.Equal(tm) || g.Location() != time.UTC {
				t.Errorf("%s.Parse(%q) = %v, want %v in UTC", tc.kind, tc.cell, got, tm)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s.Parse(%q) = %#v, want %#v", tc.kind, tc.cell, got, tc.want)
		}
	}
}
