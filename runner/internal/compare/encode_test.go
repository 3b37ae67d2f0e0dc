package compare

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// richReport returns a report that uses every part of the formats: a significant shift with a
// failing gate, a config on each side only, a differing environment, warnings of rows and of
// the report, thresholds of each direction, and missing values.
func richReport(t *testing.T) *Report {
	t.Helper()
	rep, err := buildRichReport()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func buildRichReport() (*Report, error) {
	configs := testConfigs(8, "a", "b|c", "d")
	shifted := baseDist
	shifted.ttft *= 1.5
	shifted.tokens = 60
	e := baseEnv
	e.engineVersion, e.runner = "0.7.0", "0.2.0"
	old := sideSpec{dir: "results/exp/baseline", configs: configs[:2], env: baseEnv, seed: 1}.memory()
	nw := sideSpec{dir: "results/exp/20261129T081200Z-abcdef", configs: configs[1:], env: e, seed: 2,
		dists: map[string]dist{"b|c": shifted}}.memory()
	nw.Notes = []string{"requests.csv:9: skipped a torn last line (the writer stopped mid-write)"}
	ts, err := ParseThresholds("ttft:+10%,e2e:-20%,output_tokens:±1%,tpot_token:+2.5%")
	if err != nil {
		return nil, err
	}
	return Compare(old, nw, Options{Thresholds: ts})
}

// comparable replaces NaN, which is unequal to itself, by −Inf, so that reflect.DeepEqual can
// compare rows.
func comparable(rows []Row) []Row {
	out := append([]Row(nil), rows...)
	fix := func(x *float64) {
		if math.IsNaN(*x) {
			*x = math.Inf(-1)
		}
	}
	for i := range out {
		r := &out[i]
		for _, x := range []*float64{&r.Old.Median, &r.Old.CILow, &r.Old.CIHigh, &r.New.Median, &r.New.CILow, &r.New.CIHigh,
			&r.ChangePct, &r.P, &r.MinP} {
			fix(x)
		}
	}
	return out
}

func TestRichReportCoversTheFormats(t *testing.T) {
	rep := richReport(t)
	if len(rep.OnlyOld) != 1 || len(rep.OnlyNew) != 1 || len(DifferingEnv(rep.Env)) == 0 || !rep.Gate.Failed() ||
		len(rep.Warnings) < 2 || len(rep.Gate.Thresholds) != 4 {
		t.Fatalf("the rich report lacks a part: only old %v, only new %v, env %v, gate %s, warnings %q",
			rep.OnlyOld, rep.OnlyNew, DifferingEnv(rep.Env), rep.Gate.Result, rep.Warnings)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := richReport(t)
	var first bytes.Buffer
	if err := NewJSONEncoder(&first).Encode(rep); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeJSON(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(got.Rows), comparable(rep.Rows)) {
		t.Errorf("rows differ after a round trip")
	}
	a, b := *got, *rep
	a.Rows, b.Rows = nil, nil
	if !a.Old.Start.Equal(b.Old.Start) || !a.New.Start.Equal(b.New.Start) {
		t.Errorf("start times differ: %v %v", a.Old.Start, b.Old.Start)
	}
	a.Old.Start, a.New.Start = b.Old.Start, b.New.Start
	if !reflect.DeepEqual(a, b) {
		t.Errorf("report differs after a round trip:\n got %+v\nwant %+v", a, b)
	}
	var second bytes.Buffer
	if err := NewJSONEncoder(&second).Encode(got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("encoding the decoded report gives other bytes")
	}
	for _, want := range []string{`"environment_differs": true`, `"result": "fail"`, `"rule": "output_tokens:±1%"`, `"p_value": null`} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("json lacks %s", want)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	rep := richReport(t)
	var buf bytes.Buffer
	if err := NewCSVEncoder(&buf).Encode(rep); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV(bytes.NewReader(buf.Bytes()), "diff.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(rows), comparable(rep.Rows)) {
		for i := range rows {
			if i < len(rep.Rows) && !reflect.DeepEqual(comparable(rows[i:i+1]), comparable(rep.Rows[i:i+1])) {
				t.Errorf("row %d:\n got %+v\nwant %+v", i, rows[i], rep.Rows[i])
				break
			}
		}
		t.Fatalf("rows differ after a round trip (%d rows, want %d)", len(rows), len(rep.Rows))
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1+len(rep.Rows) || lines[0] != strings.Join(CSVColumns, ",") {
		t.Errorf("%d lines, header %q", len(lines), lines[0])
	}
}

func TestWarningsCell(t *testing.T) {
	for _, ws := range [][]string{nil, {"one"}, {"a; b", `back\slash`, ""}, {";", "; ", `\`}} {
		got, err := splitWarnings(joinWarnings(ws))
		if err != nil {
			t.Fatalf("%q: %v", ws, err)
		}
		if len(ws) == 0 && got == nil {
			continue
		}
		if !reflect.DeepEqual(got, ws) {
			t.Errorf("%q came back as %q", ws, got)
		}
	}
}

func TestReadCSVErrors(t *testing.T) {
	header := strings.Join(CSVColumns, ",") + "\n"
	good := "id-a,a,ttft_ms,ms,both,8,0,40,39,41,8,0,44,43,45,10,0.001,exact,0.0002,true,worse,+5%,fail,w1; w2\n"
	if _, err := ReadCSV(strings.NewReader(header+good), "d.csv"); err != nil {
		t.Fatalf("a good row: %v", err)
	}
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", "d.csv:1: empty file"},
		{"header", strings.Replace(header, "label", "name", 1), `d.csv:1: column 2 is "name", want "label"`},
		{"short header", "config_id,label\n", "wrong number of fields"},
		{"count", header + strings.Replace(good, ",8,0,40", ",x,0,40", 1), "d.csv:2: old_n: not a count"},
		{"negative", header + strings.Replace(good, ",8,0,40", ",-1,0,40", 1), "d.csv:2: old_n: not a count"},
		{"float", header + strings.Replace(good, ",40,39", ",NaN,39", 1), "d.csv:2: old_median: not a finite number"},
		{"unit", header + strings.Replace(good, ",ms,", ",s,", 1), `d.csv:2: unit: "s" is not one of ms, count`},
		{"verdict", header + strings.Replace(good, ",worse,", ",bad,", 1), "d.csv:2: verdict"},
		{"test", header + strings.Replace(good, ",exact,", ",t,", 1), "d.csv:2: test"},
		{"significant", header + strings.Replace(good, ",true,", ",yes,", 1), "d.csv:2: significant"},
		{"gate", header + strings.Replace(good, ",fail,", ",no,", 1), "d.csv:2: gate"},
		{"presence", header + strings.Replace(good, ",both,", ",all,", 1), "d.csv:2: presence"},
		{"warnings", header + strings.Replace(good, "w1; w2", `w1\x`, 1), "d.csv:2: warnings: a backslash"},
		{"warnings semicolon", header + strings.Replace(good, "w1; w2", "w1;w2", 1), "d.csv:2: warnings: a ';' not followed"},
	} {
		_, err := ReadCSV(strings.NewReader(tt.in), "d.csv")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := NewJSONEncoder(&buf).Encode(richReport(t)); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, tt := range []struct {
		name, in, want string
	}{
		{"version", strings.Replace(good, `"version": 1`, `"version": 2`, 1), "version 2 is not supported"},
		{"unknown field", strings.Replace(good, `"alpha"`, `"beta"`, 1), `unknown field "beta"`},
		{"direction", strings.Replace(good, `"direction": "±"`, `"direction": "~"`, 1), `direction "~" is not +, - or ±`},
		{"not json", "{", "decode diff json"},
	} {
		_, err := DecodeJSON(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestNewEncoder(t *testing.T) {
	for _, f := range append(Formats(), "md") {
		if _, err := NewEncoder(f, &bytes.Buffer{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := NewEncoder("html", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "text, markdown, csv, json") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestMarkdownEscapes checks that a label with a pipe does not break the table.
func TestMarkdownEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := NewMarkdownEncoder(&buf).Encode(richReport(t)); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, "| b") {
			if !strings.HasPrefix(line, `| b\|c | `) || strings.Count(line, " | ")-strings.Count(line, `\| `) != 7 {
				t.Errorf("table row %q", line)
			}
		}
	}
	if !strings.Contains(buf.String(), "> [!WARNING]") || !strings.Contains(buf.String(), "**Gate: FAIL**") {
		t.Errorf("markdown lacks the environment warning or the gate:\n%s", buf.String())
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

var errWrite = errors.New("disk full")

func TestEncodersReportWriteErrors(t *testing.T) {
	rep := richReport(t)
	for _, f := range Formats() {
		enc, _ := NewEncoder(f, failingWriter{})
		if err := enc.Encode(rep); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s: error %v, want the write error", f, err)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	var buf bytes.Buffer
	rep, err := buildRichReport()
	if err != nil {
		f.Fatal(err)
	}
	if err := NewCSVEncoder(&buf).Encode(rep); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(strings.Join(CSVColumns, ",") + "\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := NewCSVEncoder(&out).Encode(&Report{Rows: rows}); err != nil {
			t.Fatal(err)
		}
		again, err := ReadCSV(&out, "again.csv")
		if err != nil {
			t.Fatalf("re-reading encoded rows: %v", err)
		}
		if !reflect.DeepEqual(comparable(again), comparable(rows)) {
			t.Fatalf("rows change in a second round trip")
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	var buf bytes.Buffer
	rep, err := buildRichReport()
	if err != nil {
		f.Fatal(err)
	}
	if err := NewJSONEncoder(&buf).Encode(rep); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(`{"version":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := DecodeJSON(strings.NewReader(in))
		if err != nil {
			return
		}
		var first, second bytes.Buffer
		if err := NewJSONEncoder(&first).Encode(rep); err != nil {
			t.Fatal(err)
		}
		again, err := DecodeJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("re-reading encoded report: %v", err)
		}
		if err := NewJSONEncoder(&second).Encode(again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("report changes in a second round trip")
		}
	})
}

func TestPValue(t *testing.T) {
	for _, tt := range []struct {
		p, alpha float64
		want     string
	}{
		{0.7552, 0.05, "0.755"},
		{1, 0.05, "1.000"},
		{0.0499, 0.05, "0.0499"}, // three decimals would read 0.050, not significant
		{0.04996, 0.05, "0.04996"},
		{0.05, 0.05, "0.050"},
		{0.05004, 0.05, "0.050"},
		{0.0104, 0.01, "0.010"},
		{0.0096, 0.01, "0.0096"},
		{0.0012, 0.05, "0.001"},
		{0.00099, 0.05, "<0.001"},
		{math.NaN(), 0.05, "-"},
	} {
		if got := pValue(tt.p, tt.alpha); got != tt.want {
			t.Errorf("pValue(%v, %v) = %q, want %q", tt.p, tt.alpha, got, tt.want)
		}
	}
}
