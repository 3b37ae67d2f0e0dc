package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenRequests returns the header and the first row of the golden requests.csv.
func goldenRequests(t *testing.T) (header, row string) {
	b, err := os.ReadFile(filepath.Join("testdata", "folder", RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 3)
	return lines[0], lines[1]
}

func TestRequestScannerErrors(t *testing.T) {
	header, row := goldenRequests(t)
	cols := strings.Split(header, ",")
	cells := strings.Split(row, ",")
	with := func(col, val string) string {
		c := append([]string(nil), cells...)
		for i, h := range cols {
			if h == col {
				c[i] = val
			}
		}
		return strings.Join(c, ",")
	}
	tests := []struct {
		name, in, want string
		torn           bool
		version        bool
	}{
		{name: "empty file", in: "", want: "requests.csv:1: empty file: no header row"},
		{name: "not ours", in: "a,b\n1,2\n", want: "requests.csv:1: no schema_version column"},
		{name: "missing column", in: strings.Replace(header, ",ttft_ms", "", 1) + "\n", want: "requests.csv:1: missing column ttft_ms"},
		{name: "repeated column", in: header + ",seq\n", want: `requests.csv:1: column "seq" appears twice`},
		{name: "newer version", in: header + "\n" + row + "\n" + with("schema_version", "2") + "\n",
			want: "requests.csv:3: schema_version 2 is not supported: this runner reads version 1", version: true},
		{name: "bad duration", in: header + "\n" + with("ttft_ms", "fast") + "\n",
			want: `requests.csv:2: ttft_ms: not a number of milliseconds: "fast"`},
		{name: "NaN is not missing", in: header + "\n" + with("e2e_ms", "NaN") + "\n",
			want: `requests.csv:2: e2e_ms: not a number of milliseconds: "NaN"`},
		{name: "bad bool", in: header + "\n" + with("conn_reused", "yes") + "\n",
			want: `requests.csv:2: conn_reused: not true or false: "yes"`},
		{name: "bad time", in: header + "\n" + with("start_time", "yesterday") + "\n",
			want: `requests.csv:2: start_time: not an RFC 3339 timestamp`},
		{name: "id mismatch", in: header + "\n" + with("request_id", "other-3") + "\n",
			want: `requests.csv:2: request_id: request_id "other-3" does not match`},
		{name: "short row", in: header + "\n" + row + "\n1,x\n" + row + "\n", want: "requests.csv:3: wrong number of fields"},
		{name: "torn last line", in: header + "\n" + row + "\n" + row[:40], want: "requests.csv:3: torn last line", torn: true},
		{name: "torn inside a quote", in: header + "\n" + row + "\n" + `1,"c0`, want: "requests.csv:3: torn last line", torn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := RequestsCSV.NewScanner(strings.NewReader(tt.in), RequestsFile)
			for s.Scan() {
			}
			err := s.Err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			var torn *TornLineError
			if errors.As(err, &torn) != tt.torn {
				t.Errorf("torn = %v, want %v", !tt.torn, tt.torn)
			}
			var ver *VersionError
			if errors.As(err, &ver) != tt.version {
				t.Errorf("version error = %v, want %v", !tt.version, tt.version)
			}
		})
	}
}

func TestScannerReadsRowsBeforeAnError(t *testing.T) {
	header, row := goldenRequests(t)
	s := RequestsCSV.NewScanner(strings.NewReader(header+"\n"+row+"\n"+row[:30]), RequestsFile)
	n := 0
	for s.Scan() {
		n++
		if s.Line() != 2 || s.Record().Seq != 0 {
			t.Errorf("row %d at line %d", n, s.Line())
		}
	}
	var torn *TornLineError
	if n != 1 || !errors.As(s.Err(), &torn) || torn.Offset != int64(len(header)+1+len(row)+1) {
		t.Errorf("rows %d, err %v", n, s.Err())
	}
}

func TestScannerToleratesAddedColumns(t *testing.T) {
	header, row := goldenRequests(t)
	// A later minor revision may add columns anywhere; this reader ignores them.
	in := "extra_ms," + header + ",note\n1.5," + row + ",hello\n"
	s := RequestsCSV.NewScanner(strings.NewReader(in), RequestsFile)
	if !s.Scan() || s.Record().ConfigID != "c0-9f3a" || s.Record().TTFT == nil {
		t.Fatalf("scan with added columns: %v", s.Err())
	}
	if s.Scan() || s.Err() != nil {
		t.Errorf("after the only row: %v", s.Err())
	}
}

func TestJSONLScannerErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		torn           bool
	}{
		{"no version", `{"request_id":"a-0"}` + "\n", "outputs.jsonl:1: no schema_version field", false},
		{"newer version", `{"schema_version":1,"text":"a"}` + "\n\n" + `{"schema_version":7}` + "\n", "outputs.jsonl:3: schema_version 7 is not supported", false},
		{"not json", "{oops}\n", "outputs.jsonl:1: invalid character", false},
		{"torn", `{"schema_version":1,"text":"a"}` + "\n" + `{"schema_version":1,"te`, "outputs.jsonl:2: torn last line", true},
	}
	for _, tt := range tests {
		s := OutputsJSONL.NewScanner(strings.NewReader(tt.in), OutputsFile)
		for s.Scan() {
		}
		var torn *TornLineError
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &torn) != tt.torn {
			t.Errorf("%s: error %v, want one containing %q (torn %v)", tt.name, err, tt.want, tt.torn)
		}
	}
}

func TestOpenRefusesUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"schema_version": 2, "status": "complete"}`), 0o644)
	_, err := Open(dir)
	var ver *VersionError
	if !errors.As(err, &ver) || !strings.Contains(err.Error(), "schema_version 2 is not supported: this runner reads version 1") {
		t.Errorf("Open of a version 2 folder: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a result folder") {
		t.Errorf("Open of an empty directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"schema_version": 1, "status": "done"}`), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), `unknown status "done"`) {
		t.Errorf("Open with an unknown status: %v", err)
	}
	// A file given for a folder (a folder's requests.csv, say), and a path that does not exist,
	// are named as what they are.
	file := filepath.Join(dir, ManifestFile)
	if _, err := Open(file); err == nil || err.Error() != file+": a file, not a result folder" {
		t.Errorf("Open of a file: %v", err)
	}
	missing := filepath.Join(dir, "none")
	if _, err := Open(missing); err == nil || err.Error() != missing+": no such folder" {
		t.Errorf("Open of a missing path: %v", err)
	}
}
