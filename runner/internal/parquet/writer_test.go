package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// allTypes has a required and an optional column of every type.
var allTypes = Schema{Name: "all", Columns: []Column{
	{Name: "i", Type: Int64}, {Name: "i_opt", Type: Int64, Optional: true},
	{Name: "d", Type: Double}, {Name: "d_opt", Type: Double, Optional: true},
	{Name: "b", Type: Boolean}, {Name: "b_opt", Type: Boolean, Optional: true},
	{Name: "s", Type: String}, {Name: "s_opt", Type: String, Optional: true},
	{Name: "t", Type: Timestamp}, {Name: "t_opt", Type: Timestamp, Optional: true},
}}

// wantTypes is how parquet-go describes the columns of allTypes: repetition, physical type,
// logical type; and the converted type of each, -1 for none.
var wantTypes = []struct {
	desc      string
	converted int
}{
	{"required INT64 INT(64,true)", 18}, {"optional INT64 INT(64,true)", 18},
	{"required DOUBLE", -1}, {"optional DOUBLE", -1},
	{"required BOOLEAN", -1}, {"optional BOOLEAN", -1},
	{"required BYTE_ARRAY STRING", 0}, {"optional BYTE_ARRAY STRING", 0},
	{"required INT64 TIMESTAMP(isAdjustedToUTC=true,unit=NANOS)", -1},
	{"optional INT64 TIMESTAMP(isAdjustedToUTC=true,unit=NANOS)", -1},
}

// texts are the strings of the rows: empty, unicode, CSV's special characters, and one
// longer than the statistics keep.
var texts = []string{"", "plain", "naïve café", "日本語のテキスト", "emoji 🚀✨", "a,b\n\"c\"", "\x00nul", strings.Repeat("x", 100)}

// testRow returns row k of allTypes. The optional columns are null in every third row, and in
// every row with allNull.
func testRow(k int, allNull bool) []Value {
	i := int64(k)*7919 - 50000
	switch k {
	case 1:
		i = math.MinInt64
	case 2:
		i = math.MaxInt64
	}
	d := float64(k)/3 - 10
	switch k % 11 {
	case 4:
		d = math.Copysign(0, -1)
	case 7:
		d = math.Inf(1)
	}
	dOpt := d * 2
	if k%13 == 5 {
		dOpt = math.NaN()
	}
	ts := time.Date(2026, 11, 29, 8, 12, 0, 123456789, time.UTC).Add(time.Duration(k) * time.Millisecond)
	if k == 3 {
		ts = time.Date(1901, 1, 2, 3, 4, 5, 6, time.UTC) // before 1970: negative
	}
	row := []Value{
		Int64Value(i), Int64Value(-i),
		DoubleValue(d), DoubleValue(dOpt),
		BooleanValue(k%2 == 0), BooleanValue(k%4 == 1),
		StringValue(texts[k%len(texts)]), StringValue(texts[(k+3)%len(texts)]),
		TimestampValue(ts), TimestampValue(ts.Add(-time.Hour)),
	}
	for j, c := range allTypes.Columns {
		if c.Optional && (allNull || k%3 == 0) {
			row[j] = Null()
		}
	}
	return row
}

// writeFile writes rows of s with opts and returns the file.
func writeFile(t testing.TB, s Schema, opts Options, rows [][]Value) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readFile opens a file with parquet-go and reads all its rows.
func readFile(t *testing.T, b []byte) (*pq.File, []pq.Row) {
	t.Helper()
	pf, err := pq.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("parquet-go opens the file: %v", err)
	}
	r := pq.NewReader(pf)
	defer r.Close()
	var rows []pq.Row
	for {
		buf := make([]pq.Row, 16)
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			rows = append(rows, row.Clone())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parquet-go reads the rows: %v", err)
		}
	}
	return pf, rows
}

// describe is how the test names a column's type as parquet-go reads it.
func describe(f pq.Field) string {
	s := "required "
	if f.Optional() {
		s = "optional "
	}
	s += f.Type().Kind().String()
	if lt := f.Type().LogicalType(); lt != nil && lt.Value != nil {
		s += " " + lt.String()
	}
	return s
}

// sameValue reports whether parquet-go's value is the one written to a column of type typ.
func sameValue(typ Type, got pq.Value, want Value) bool {
	if got.IsNull() || want.IsNull() {
		return got.IsNull() == want.IsNull()
	}
	switch typ {
	case Int64, Timestamp:
		return got.Int64() == int64(want.num)
	case Double:
		return math.Float64bits(got.Double()) == want.num // NaN and -0 by their bits
	case Boolean:
		return got.Boolean() == (want.num == 1)
	case String:
		return string(got.ByteArray()) == want.str
	}
	return false
}

// wantStats returns the null count, min and max that a chunk of column j holding rows should
// have, min and max in the PLAIN encoding, nil where the chunk has none.
func wantStats(j int, rows [][]Value) (nulls int64, lo, hi []byte) {
	typ := allTypes.Columns[j].Type
	var have []Value
	for _, r := range rows {
		switch v := r[j]; {
		case v.IsNull():
			nulls++
		case typ == Double && math.IsNaN(math.Float64frombits(v.num)):
		default:
			have = append(have, v)
		}
	}
	if len(have) == 0 {
		return nulls, nil, nil
	}
	less := func(a, b Value) bool {
		switch typ {
		case Double:
			return math.Float64frombits(a.num) < math.Float64frombits(b.num)
		case String:
			return a.str < b.str
		}
		return int64(a.num) < int64(b.num)
	}
	mn, mx := have[0], have[0]
	for _, v := range have[1:] {
		if less(v, mn) {
			mn = v
		}
		if less(mx, v) {
			mx = v
		}
	}
	enc := func(v Value, zeroSign float64) []byte {
		switch typ {
		case Boolean:
			return []byte{byte(v.num)}
		case String:
			return []byte(v.str)
		case Double:
			if math.Float64frombits(v.num) == 0 {
				return binary.LittleEndian.AppendUint64(nil, math.Float64bits(zeroSign))
			}
		}
		return binary.LittleEndian.AppendUint64(nil, v.num)
	}
	lo, hi = enc(mn, math.Copysign(0, -1)), enc(mx, 0)
	if typ == String && (len(lo) > maxStatBytes || len(hi) > maxStatBytes) {
		return nulls, nil, nil
	}
	return nulls, lo, hi
}

// TestRoundTrip writes files of every type and reads them back with parquet-go: the schema,
// row count, row groups, values, statistics and key-value metadata are the ones written.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rows         int
		rowsPerGroup int
		codec        Codec
		allNull      bool
	}{
		{"no rows", 0, 0, Uncompressed, false},
		{"no rows, gzip", 0, 0, Gzip, false},
		{"one row", 1, 0, Uncompressed, false},
		{"one row of nulls", 1, 0, Gzip, true},
		{"one group", 300, 0, Uncompressed, false},
		{"one group, gzip", 300, 0, Gzip, false},
		{"groups of 7", 100, 7, Uncompressed, false},
		{"groups of 7, gzip", 100, 7, Gzip, false},
		{"full last group", 70, 7, Gzip, false},
		{"groups of one", 9, 1, Uncompressed, false},
		{"optional columns all null", 50, 16, Uncompressed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rows [][]Value
			for k := range tc.rows {
				rows = append(rows, testRow(k, tc.allNull))
			}
			meta := []KeyValue{{"runner.source", "all.csv"}, {"empty", ""}}
			b := writeFile(t, allTypes, Options{RowsPerGroup: tc.rowsPerGroup, Codec: tc.codec, Metadata: meta, CreatedBy: "runner test"}, rows)
			if !bytes.HasPrefix(b, []byte("PAR1")) || !bytes.HasSuffix(b, []byte("PAR1")) {
				t.Fatalf("no magic: % x ... % x", b[:min(4, len(b))], b[max(0, len(b)-4):])
			}
			pf, got := readFile(t, b)
			fields := pf.Schema().Fields()
			if pf.Schema().Name() != "all" || len(fields) != len(allTypes.Columns) {
				t.Fatalf("schema %s with %d columns", pf.Schema().Name(), len(fields))
			}
			md := pf.Metadata()
			for j, c := range allTypes.Columns {
				el := md.Schema[j+1]
				conv := -1
				if el.ConvertedType.Valid {
					conv = int(el.ConvertedType.V)
				}
				if fields[j].Name() != c.Name || describe(fields[j]) != wantTypes[j].desc || conv != wantTypes[j].converted {
					t.Errorf("column %d: %s %s converted %d, want %s %s converted %d", j, fields[j].Name(),
						describe(fields[j]), conv, c.Name, wantTypes[j].desc, wantTypes[j].converted)
				}
			}
			if md.NumRows != int64(tc.rows) || pf.NumRows() != int64(tc.rows) || len(got) != tc.rows {
				t.Fatalf("%d rows in the footer, %d read, want %d", md.NumRows, len(got), tc.rows)
			}
			for k, row := range got {
				for j, c := range allTypes.Columns {
					if !sameValue(c.Type, row[j], rows[k][j]) {
						t.Errorf("row %d, %s: read %v, wrote %+v", k, c.Name, row[j], rows[k][j])
					}
				}
			}
			for _, kv := range meta {
				if v, ok := pf.Lookup(kv.Key); !ok || v != kv.Value {
					t.Errorf("metadata %s = %q, %v; want %q", kv.Key, v, ok, kv.Value)
				}
			}
			if md.CreatedBy != "runner test" {
				t.Errorf("created_by %q", md.CreatedBy)
			}
			per := tc.rowsPerGroup
			if per == 0 {
				per = DefaultRowsPerGroup
			}
			if want := (tc.rows + per - 1) / per; len(md.RowGroups) != want {
				t.Fatalf("%d row groups, want %d", len(md.RowGroups), want)
			}
			codec := format.Uncompressed
			if tc.codec == Gzip {
				codec = format.Gzip
			}
			for g, rg := range md.RowGroups {
				groupRows := rows[g*per : min(len(rows), (g+1)*per)]
				if rg.NumRows != int64(len(groupRows)) {
					t.Errorf("group %d: %d rows, want %d", g, rg.NumRows, len(groupRows))
				}
				for j, cc := range rg.Columns {
					m := cc.MetaData
					nulls, lo, hi := wantStats(j, groupRows)
					if m.Codec != codec || m.NumValues != int64(len(groupRows)) || m.Statistics.NullCount != nulls ||
						!bytes.Equal(m.Statistics.MinValue, lo) || !bytes.Equal(m.Statistics.MaxValue, hi) {
						t.Errorf("group %d, %s: codec %v, %d values, %d nulls, min % x, max % x; want %v, %d, %d, % x, % x", g,
							allTypes.Columns[j].Name, m.Codec, m.NumValues, m.Statistics.NullCount, m.Statistics.MinValue,
							m.Statistics.MaxValue, codec, len(groupRows), nulls, lo, hi)
					}
				}
			}
		})
	}
}

// TestManyPages writes a column chunk larger than a page: it is cut into pages, each read
// back.
func TestManyPages(t *testing.T) {
	s := Schema{Name: "big", Columns: []Column{{Name: "n", Type: Int64}, {Name: "text", Type: String, Optional: true}}}
	long := strings.Repeat("é", 50_000) // 100 kB
	var rows [][]Value
	for k := range 40 {
		text := StringValue(fmt.Sprintf("%d %s", k, long))
		if k%5 == 0 {
			text = Null()
		}
		rows = append(rows, []Value{Int64Value(int64(k)), text})
	}
	for _, codec := range []Codec{Uncompressed, Gzip} {
		b := writeFile(t, s, Options{Codec: codec}, rows)
		pf, got := readFile(t, b)
		if len(got) != len(rows) {
			t.Fatalf("%d rows, want %d", len(got), len(rows))
		}
		for k, row := range got {
			if row[0].Int64() != int64(k) || !sameValue(String, row[1], rows[k][1]) {
				t.Errorf("codec %d, row %d differs", codec, k)
			}
		}
		pages := pf.RowGroups()[0].ColumnChunks()[1].Pages()
		n, values := 0, int64(0)
		for {
			p, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
			values += p.NumRows()
		}
		pages.Close()
		if n < 3 || values != int64(len(rows)) {
			t.Errorf("codec %d: %d pages of %d rows in all, want at least 3 of %d", codec, n, values, len(rows))
		}
	}
}

// TestFirstPageBytes checks the bytes of a small file's first column chunk, worked out by
// hand: the magic, then a PageHeader of type DATA_PAGE with its sizes and a DataPageHeader of
// PLAIN values and RLE levels, then the data.
func TestFirstPageBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		col  Column
		rows []Value
		want []byte
	}{
		{"required int64", Column{Name: "n", Type: Int64}, []Value{Int64Value(1), Int64Value(-1)}, []byte{
			'P', 'A', 'R', '1',
			0x15, 0x00, 0x15, 0x20, 0x15, 0x20, // data page, 16 bytes uncompressed and stored
			0x2c, 0x15, 0x04, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00, // 2 values, PLAIN, RLE, RLE
			1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		}},
		{"optional string", Column{Name: "s", Type: String, Optional: true}, []Value{Null(), StringValue("é")}, []byte{
			'P', 'A', 'R', '1',
			0x15, 0x00, 0x15, 0x18, 0x15, 0x18, // 12 bytes
			0x2c, 0x15, 0x04, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00,
			2, 0, 0, 0, 0x03, 0x02, // levels 0 1: one bit-packed group
			2, 0, 0, 0, 0xc3, 0xa9,
		}},
		{"required booleans", Column{Name: "b", Type: Boolean}, []Value{BooleanValue(true), BooleanValue(false), BooleanValue(true)}, []byte{
			'P', 'A', 'R', '1',
			0x15, 0x00, 0x15, 0x02, 0x15, 0x02, // 1 byte
			0x2c, 0x15, 0x06, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00,
			0x05, // true, false, true: bits 0 and 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rows [][]Value
			for _, v := range tc.rows {
				rows = append(rows, []Value{v})
			}
			b := writeFile(t, Schema{Name: "x", Columns: []Column{tc.col}}, Options{}, rows)
			if !bytes.HasPrefix(b, tc.want) {
				t.Errorf("% x\nwant % x", b[:min(len(b), len(tc.want))], tc.want)
			}
			// The footer follows the chunk, its length in the 4 bytes before the magic.
			n := binary.LittleEndian.Uint32(b[len(b)-8:])
			if int(n) != len(b)-8-len(tc.want) {
				t.Errorf("footer of %d bytes, want %d", n, len(b)-8-len(tc.want))
			}
		})
	}
}

// failingWriter fails once it has taken n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("disk full")
	}
	f.n -= len(b)
	return len(b), nil
}

func TestRefusals(t *testing.T) {
	two := Schema{Name: "x", Columns: []Column{{Name: "a", Type: Int64}, {Name: "b", Type: String, Optional: true}}}
	for _, tc := range []struct {
		name   string
		schema Schema
		opts   Options
		row    []Value
		want   string
	}{
		{"empty name", Schema{Columns: []Column{{Type: Int64}}}, Options{}, nil, `column 0: empty or repeated name ""`},
		{"repeated name", Schema{Columns: []Column{{Name: "a", Type: Int64}, {Name: "a", Type: Double}}}, Options{}, nil,
			`column 1: empty or repeated name "a"`},
		{"unknown type", Schema{Columns: []Column{{Name: "a"}}}, Options{}, nil, "column a: unknown type 0"},
		{"negative group", two, Options{RowsPerGroup: -1}, nil, "-1 rows per group"},
		{"unknown codec", two, Options{Codec: 9}, nil, "unknown codec 9"},
		{"short row", two, Options{}, []Value{Int64Value(1)}, "a row of 1 values for 2 columns"},
		{"null in required", two, Options{}, []Value{Null(), Null()}, "column a: null in a required column"},
		{"wrong type", two, Options{}, []Value{Int64Value(1), Int64Value(2)}, "column b: a value of type INT64 in a column of type BYTE_ARRAY STRING"},
		{"timestamp in int64", two, Options{}, []Value{TimestampValue(time.Unix(0, 0)), Null()}, "column a: a value of type INT64 TIMESTAMP(NANOS, UTC) in a column of type INT64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(io.Discard, tc.schema, tc.opts)
			if err == nil {
				err = w.Write(tc.row)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A refused row leaves nothing behind: the file has the rows before it.
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, two, Options{})
	if err := w.Write([]Value{Int64Value(1), StringValue("x")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]Value{Int64Value(2), DoubleValue(1)}); err == nil {
		t.Fatal("a double in a string column was taken")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]Value{Int64Value(3), Null()}); err == nil || !strings.Contains(err.Error(), "write after close") {
		t.Errorf("write after close: %v", err)
	}
	pf, rows := readFile(t, buf.Bytes())
	if pf.NumRows() != 1 || len(rows) != 1 || rows[0][0].Int64() != 1 || string(rows[0][1].ByteArray()) != "x" {
		t.Errorf("after a refused row: %v", rows)
	}
}

// TestWriteError checks that a failing file is reported, by Write when a group is written and
// by Close otherwise, and that the Writer then stays failed.
func TestWriteError(t *testing.T) {
	s := Schema{Name: "x", Columns: []Column{{Name: "a", Type: Int64}}}
	// 4 bytes of magic, then chunks of 27 bytes for two rows, 19 for one, then the footer.
	for _, n := range []int{0, 3, 4, 30, 31, 49, 50, 60} {
		w, _ := NewWriter(&failingWriter{n: n}, s, Options{RowsPerGroup: 2})
		var err error
		for k := 0; k < 3 && err == nil; k++ {
			err = w.Write([]Value{Int64Value(int64(k))})
		}
		if err == nil {
			err = w.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "write: disk full") {
			t.Errorf("after %d bytes: %v", n, err)
		}
		if err := w.Close(); err == nil {
			t.Errorf("after %d bytes: Close after a failure succeeds", n)
		}
	}
}

// countingWriter counts the bytes written to it.
type countingWriter int

func (c *countingWriter) Write(b []byte) (int, error) {
	*c += countingWriter(len(b))
	return len(b), nil
}

// BenchmarkWrite100kEvents writes 100,000 rows shaped like events.csv's.
func BenchmarkWrite100kEvents(b *testing.B) {
	s := Schema{Name: "events", Columns: []Column{
		{Name: "schema_version", Type: Int64}, {Name: "request_id", Type: String, Optional: true},
		{Name: "event_seq", Type: Int64}, {Name: "since_t0_ms", Type: Double, Optional: true},
		{Name: "wire_bytes", Type: Int64, Optional: true}, {Name: "text_bytes", Type: Int64, Optional: true},
		{Name: "tokens", Type: Int64, Optional: true}, {Name: "is_text", Type: Boolean, Optional: true},
	}}
	const n = 100_000
	rows := make([][]Value, n)
	for k := range rows {
		tokens := Int64Value(1)
		if k%100 == 0 {
			tokens = Null()
		}
		rows[k] = []Value{Int64Value(1), StringValue(fmt.Sprintf("c%d-9f3a-%d", k/5000, k/100)), Int64Value(int64(k % 100)),
			DoubleValue(19.8 + float64(k%100)*0.3), Int64Value(int64(120 + k%60)), Int64Value(int64(k % 7)), tokens,
			BooleanValue(k%100 != 0)}
	}
	for _, codec := range []struct {
		name  string
		codec Codec
	}{{"uncompressed", Uncompressed}, {"gzip", Gzip}} {
		b.Run(codec.name, func(b *testing.B) {
			var out countingWriter
			for b.Loop() {
				out = 0
				w, _ := NewWriter(&out, s, Options{Codec: codec.codec})
				for _, r := range rows {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out), "file-bytes")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
