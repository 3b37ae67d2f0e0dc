package export

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

var t0 = time.Date(2026, 11, 29, 8, 12, 0, 123456789, time.UTC)

// writeFolder writes a result folder shaped like a run on an engine that never reports
// per-event token ids: tokens_from_ids and events' tokens are empty in every row. It has two
// configs on one server, a failed request, and a text with a line break. With close unset the
// folder is left as a killed run leaves it: no summary.csv, and a torn last line in
// events.csv.
func writeFolder(t *testing.T, close bool) string {
	t.Helper()
	src := []byte("version: 1\nname: export-test\n")
	exp := &experiment.Experiment{Version: 1, Name: "export-test", Path: "experiments/export-test.yaml", Source: src,
		Repetitions: 2, Warmup: 0}
	var configs []experiment.Config
	for i, mt := range []int{4, 8} {
		configs = append(configs, experiment.Config{ID: fmt.Sprintf("c%d-aaaa", i), ServerID: "s0-bbbb", Index: i,
			Label: fmt.Sprintf("max_tokens=%d", mt), Repetitions: 2,
			Axes:    []experiment.AxisValue{{Path: "request.max_tokens", Value: strconv.Itoa(mt)}},
			Server:  experiment.Server{Engine: "ollama", Model: "tiny"},
			Request: experiment.Request{API: "chat", MaxTokens: mt}})
	}
	f, err := results.Create(t.TempDir(), exp, configs, results.RunInfo{RunnerVersion: "test", Start: t0,
		Machine: &results.Machine{Hostname: "h"}})
	if err != nil {
		t.Fatal(err)
	}
	boot := 1.25
	if err := f.SetServer(results.ServerInfo{ServerID: "s0-bbbb", Engine: "ollama", Model: "tiny", BootStart: t0,
		BootSeconds: &boot}); err != nil {
		t.Fatal(err)
	}
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
	for _, c := range configs {
		for seq := 0; seq < 3; seq++ {
			r := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: record.PhaseMeasure, Rep: seq,
				Start: t0.Add(time.Duration(seq) * time.Second), Status: record.StatusOK, HTTPStatus: 200,
				TTFT: ms(20.5 + float64(seq)), E2E: ms(40.25), TPOTEvent: ms(2.5), TPOTToken: ms(2.5),
				Events: c.Request.MaxTokens, TextEvents: c.Request.MaxTokens, OutputTokens: record.Int(c.Request.MaxTokens),
				TokenSource: record.SourceUsage, TokensFromUsage: record.Int(c.Request.MaxTokens),
				MaxTokens: c.Request.MaxTokens, FinishReason: "length\nstop", Cache: "off", OutputText: "hi"}
			for i := 0; i < c.Request.MaxTokens; i++ {
				r.EventList = append(r.EventList, record.Event{Seq: i, SinceT0: time.Duration(20+i) * time.Millisecond,
					Bytes: 100 + i, TextLen: 2, Text: true})
			}
			if c.Index == 1 && seq == 2 {
				r.Status, r.ErrorClass, r.Error, r.HTTPStatus = record.StatusFailed, record.ErrConnect, "refused", 0
				r.TTFT, r.E2E, r.TPOTEvent, r.TPOTToken, r.OutputTokens, r.TokensFromUsage = nil, nil, nil, nil, nil, nil
				r.Events, r.TextEvents, r.EventList, r.TokenSource, r.FinishReason = 0, 0, nil, record.SourceNone, ""
			}
			if err := f.Append(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !close {
		// A process killed in the middle of writing an event row: no summary, a torn line.
		events, err := os.OpenFile(filepath.Join(f.Dir(), results.EventsFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		events.WriteString("1,c0-aaaa-9,0,12.0")
		events.Close()
		os.Remove(filepath.Join(f.Dir(), ".lock"))
		return f.Dir()
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	return f.Dir()
}

// parquetType is how the test names a column's Parquet type: repetition, physical type and
// logical type.
func parquetType(f parquet.Field) string {
	rep := "required"
	if f.Optional() {
		rep = "optional"
	}
	s := rep + " " + f.Type().Kind().String()
	if lt := f.Type().LogicalType(); lt != nil && lt.Value != nil {
		s += " " + lt.String()
	}
	return s
}

// wantType is the Parquet type of a column of each kind.
var wantType = map[results.Kind]string{
	results.KindInt:    "INT64 INT(64,true)",
	results.KindFloat:  "DOUBLE",
	results.KindBool:   "BOOLEAN",
	results.KindString: "BYTE_ARRAY STRING",
	results.KindTime:   "INT64 TIMESTAMP(isAdjustedToUTC=true,unit=NANOS)",
}

// readParquet reads a whole Parquet file.
func readParquet(t *testing.T, path string) (*parquet.File, []parquet.Row) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var rows []parquet.Row
	for {
		buf := make([]parquet.Row, 16)
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			rows = append(rows, row.Clone())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return pf, rows
}

// cellOf renders a Parquet value as the CSV writes it, for comparison with the CSV cell.
func cellOf(c results.Column, v parquet.Value) string {
	if v.IsNull() {
		return ""
	}
	switch c.Kind {
	case results.KindInt:
		return strconv.FormatInt(v.Int64(), 10)
	case results.KindFloat:
		return strconv.FormatFloat(v.Double(), 'f', 6, 64)
	case results.KindBool:
		return strconv.FormatBool(v.Boolean())
	case results.KindTime:
		return time.Unix(0, v.Int64()).UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
	}
	return string(v.ByteArray())
}

// TestParquetRoundTrip exports a folder and reads every Parquet file back: each has the CSV's
// columns in order with the types of the tables, and the values of the CSV cells, an empty
// cell as null.
func TestParquetRoundTrip(t *testing.T) {
	dir := writeFolder(t, true)
	out := filepath.Join(dir, ParquetDir)
	rep, err := Parquet(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes on a complete folder: %q", rep.Notes)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := r.Schema()
	if len(rep.Files) != len(schema) {
		t.Fatalf("wrote %d files, want %d", len(rep.Files), len(schema))
	}
	for i, sf := range schema {
		t.Run(sf.File, func(t *testing.T) {
			wf := rep.Files[i]
			if wf.CSV != sf.File || wf.Path != filepath.Join(out, strings.TrimSuffix(sf.File, ".csv")+".parquet") {
				t.Errorf("file %+v", wf)
			}
			pf, rows := readParquet(t, wf.Path)
			fields := pf.Schema().Fields()
			if len(fields) != len(sf.Columns) {
				t.Fatalf("%d columns, want %d", len(fields), len(sf.Columns))
			}
			for j, c := range sf.Columns {
				want := "optional " + wantType[c.Kind]
				if c.Required {
					want = "required " + wantType[c.Kind]
				}
				if fields[j].Name() != c.Name || parquetType(fields[j]) != want {
					t.Errorf("column %d: %s %s, want %s %s", j, fields[j].Name(), parquetType(fields[j]), c.Name, want)
				}
			}
			if v, ok := pf.Lookup("runner.schema_version"); !ok || v != "1" {
				t.Errorf("key-value metadata runner.schema_version = %q, %v", v, ok)
			}
			csvFile, err := os.Open(filepath.Join(dir, sf.File))
			if err != nil {
				t.Fatal(err)
			}
			defer csvFile.Close()
			recs, err := csv.NewReader(csvFile).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(recs)-1 || wf.Rows != len(rows) || len(rows) == 0 {
				t.Fatalf("%d parquet rows (reported %d), %d CSV rows", len(rows), wf.Rows, len(recs)-1)
			}
			for k, row := range rows {
				for j, c := range sf.Columns {
					if got, want := cellOf(c, row[j]), recs[k+1][j]; got != want {
						t.Errorf("row %d, %s: parquet %q, csv %q", k, c.Name, got, want)
					}
				}
			}
		})
	}
	// The columns that this engine never fills stay typed.
	for _, tc := range []struct{ file, column string }{
		{"requests.parquet", "tokens_from_ids"},
		{"events.parquet", "tokens"},
		{"servers.parquet", "exit_code"},
	} {
		pf, rows := readParquet(t, filepath.Join(out, tc.file))
		col, ok := pf.Schema().Lookup(tc.column)
		if !ok {
			t.Fatalf("%s: no column %s", tc.file, tc.column)
		}
		if got := parquetType(col.Node.(parquet.Field)); got != "optional "+wantType[results.KindInt] {
			t.Errorf("%s: all-empty column %s is %s", tc.file, tc.column, got)
		}
		for _, row := range rows {
			if !row[col.ColumnIndex].IsNull() {
				t.Errorf("%s: %s holds %v, want null", tc.file, tc.column, row[col.ColumnIndex])
			}
		}
	}
	// The CSV files are untouched: the folder still reads, and exporting again replaces the
	// files.
	if _, err := results.ReadAll(dir); err != nil {
		t.Errorf("folder after export: %v", err)
	}
	if _, err := Parquet(dir, out); err != nil {
		t.Errorf("second export: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".*"))
	if len(left) != 0 {
		t.Errorf("left behind %q", left)
	}
}

// TestParquetInterruptedFolder exports a folder whose writer was killed: summary.csv and
// load.csv are skipped and the torn last line of events.csv left out, each with a note.
func TestParquetInterruptedFolder(t *testing.T) {
	dir := writeFolder(t, false)
	out := t.TempDir()
	rep, err := Parquet(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 4 || len(rep.Notes) != 3 ||
		!strings.Contains(rep.Notes[0], "events.csv: skipped a torn last line") ||
		!strings.Contains(rep.Notes[1], "summary.csv: not in the folder") ||
		!strings.Contains(rep.Notes[2], "load.csv: not in the folder") {
		t.Errorf("files %+v, notes %q", rep.Files, rep.Notes)
	}
	_, rows := readParquet(t, filepath.Join(out, "events.parquet"))
	if len(rows) != 4*3+8*2 {
		t.Errorf("events.parquet has %d rows", len(rows))
	}
}

func TestWriteParquetRefusals(t *testing.T) {
	f := results.FileSchema{File: "x.csv", Columns: []results.Column{
		{Name: "schema_version", Kind: results.KindInt, Required: true},
		{Name: "n", Kind: results.KindInt, Required: true},
		{Name: "t", Kind: results.KindTime}}}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "x.csv:1: empty file"},
		{"column twice", "schema_version,n,t,n\n", `x.csv:1: column "n" appears twice`},
		{"required column missing", "schema_version,t\n", "x.csv:1: missing column n"},
		{"no schema_version", "n,t\n", "x.csv:1: missing column schema_version"},
		{"other version", "schema_version,n,t\n2,1,\n", "x.csv:2: schema_version 2 is not supported"},
		{"not an integer", "schema_version,n,t\n1,1.5,\n", `x.csv:2: n: not an integer: "1.5"`},
		{"empty required", "schema_version,n,t\n1,1,\n1,,\n", "x.csv:3: n: empty cell in a column that always has a value"},
		{"bad time", "schema_version,n,t\n1,1,noon\n", "x.csv:2: t: not an RFC 3339 timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WriteParquet(io.Discard, strings.NewReader(tc.in), f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteParquet: %v, want an error containing %q", err, tc.want)
			}
			var ve *results.VersionError
			if tc.name == "other version" && !errors.As(err, &ve) {
				t.Errorf("error %v is not a *results.VersionError", err)
			}
		})
	}
}

// TestParquetFolderWithoutLoadColumns exports a folder written before requests.csv had its
// load columns (nor the server-side ones after them): the Parquet file has every column of the
// format, those it lacks null.
func TestParquetFolderWithoutLoadColumns(t *testing.T) {
	dir := writeFolder(t, true)
	path := filepath.Join(dir, results.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// The load columns and every column added after them go.
	n := slices.Index(recs[0], "load_mode")
	if n < 0 {
		t.Fatalf("requests.csv has no load_mode column: %q", recs[0])
	}
	var old bytes.Buffer
	w := csv.NewWriter(&old)
	for _, r := range recs {
		w.Write(r[:n])
	}
	w.Flush()
	if err := os.WriteFile(path, old.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Parquet(dir, out); err != nil {
		t.Fatal(err)
	}
	pf, rows := readParquet(t, filepath.Join(out, "requests.parquet"))
	if got := len(pf.Schema().Fields()); got != len(results.RequestsCSV.Columns()) || len(rows) != len(recs)-1 {
		t.Fatalf("%d columns and %d rows, want %d and %d", got, len(rows), len(results.RequestsCSV.Columns()), len(recs)-1)
	}
	for _, row := range rows {
		for j := n; j < len(row); j++ {
			if !row[j].IsNull() {
				t.Errorf("column %s holds %v, want null", results.RequestsCSV.Columns()[j].Name, row[j])
			}
		}
	}
}

// TestParquetTelemetry exports a folder that sampled a GPU: telemetry.csv becomes
// telemetry.parquet with the table's column types.
func TestParquetTelemetry(t *testing.T) {
	dir := writeFolder(t, true)
	file, err := os.Create(filepath.Join(dir, results.TelemetryFile))
	if err != nil {
		t.Fatal(err)
	}
	e := results.TelemetryCSV.NewEncoder(file)
	clock, temp, limit := 1410, 84, 70.0
	for i := range 3 {
		s := record.GPUSample{Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), ServerID: "s0-bbbb",
			SMClockMHz: &clock, TempC: &temp, PowerLimitW: &limit, Throttle: []string{"sw_power_cap"}}
		if err := e.Encode(&s); err != nil {
			t.Fatal(err)
		}
	}
	file.Close()
	out := t.TempDir()
	rep, err := Parquet(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if last := rep.Files[len(rep.Files)-1]; last.CSV != results.TelemetryFile || last.Rows != 3 || last.Columns != len(results.TelemetryCSV.Columns()) {
		t.Errorf("last file written %+v, want telemetry.csv with 3 rows", last)
	}
	pf, rows := readParquet(t, filepath.Join(out, "telemetry.parquet"))
	if len(pf.Schema().Fields()) != len(results.TelemetryCSV.Columns()) || len(rows) != 3 {
		t.Errorf("telemetry.parquet: %d columns, %d rows", len(pf.Schema().Fields()), len(rows))
	}
}

func TestParquetRefusesATornLineInAFinishedFolder(t *testing.T) {
	dir := writeFolder(t, true)
	file, err := os.OpenFile(filepath.Join(dir, results.RequestsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteString("1,c0")
	file.Close()
	if _, err := Parquet(dir, t.TempDir()); err == nil || !strings.Contains(err.Error(), "requests.csv: torn last line") {
		t.Errorf("Parquet: %v", err)
	}
}

// TestParquetLoadServer exports a folder with the server's figures of a load point:
// load_server.csv becomes load_server.parquet, and load.parquet has load.csv's server columns.
func TestParquetLoadServer(t *testing.T) {
	dir := writeFolder(t, false)
	f, _, err := results.Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	ttft := 12500 * time.Microsecond
	row := results.LoadServerRow{ConfigID: "c1-aaaa", ServerID: "s0-bbbb", Before: t0, After: t0.Add(3 * time.Second),
		LoadServer: results.LoadServer{Requests: record.Int(3), TTFTMean: &ttft}}
	if err := f.AppendLoadServer(row); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := Parquet(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]int{}
	for _, file := range rep.Files {
		cols[file.CSV] = file.Columns
		if file.CSV == results.LoadServerFile && file.Rows != 1 {
			t.Errorf("load_server.parquet has %d rows, want 1", file.Rows)
		}
	}
	if cols[results.LoadServerFile] != len(results.LoadServerCSV.Columns()) || cols[results.LoadFile] != len(results.LoadCSV.Columns()) {
		t.Errorf("exported %v, want load_server.csv and load.csv with its server columns", cols)
	}
	pf, rows := readParquet(t, filepath.Join(out, "load.parquet"))
	if len(pf.Schema().Fields()) != len(results.LoadCSV.Columns()) || len(rows) != 2 {
		t.Errorf("load.parquet: %d columns, %d rows", len(pf.Schema().Fields()), len(rows))
	}
}
