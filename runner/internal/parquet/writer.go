// Package parquet writes flat Parquet files: a table of named columns, each of one of a few
// types, required or optional, with no nesting and no repetition. Values are PLAIN-encoded in
// version 1 data pages, uncompressed or compressed with gzip, the definition levels of optional
// columns in the RLE/bit-packed hybrid encoding, and the footer in the Thrift compact protocol,
// so that any Parquet reader can read the files.
package parquet

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Type is the type of a column: its physical type and logical annotation.
type Type uint8

// The column types.
const (
	Int64     Type = iota + 1 // INT64 annotated INT(64, signed), converted type INT_64
	Double                    // DOUBLE
	Boolean                   // BOOLEAN
	String                    // BYTE_ARRAY annotated STRING, converted type UTF8
	Timestamp                 // INT64 annotated TIMESTAMP(isAdjustedToUTC=true, NANOS): nanoseconds since 1970 in UTC
)

// String returns the type's name as a Parquet schema would write it.
func (t Type) String() string {
	switch t {
	case Int64:
		return "INT64"
	case Double:
		return "DOUBLE"
	case Boolean:
		return "BOOLEAN"
	case String:
		return "BYTE_ARRAY STRING"
	case Timestamp:
		return "INT64 TIMESTAMP(NANOS, UTC)"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Column is one column of a schema. A required column has a value in every row; an optional
// one may be null.
type Column struct {
	Name     string
	Type     Type
	Optional bool
}

// Schema is a flat table: the name of the root group and its columns, in order.
type Schema struct {
	Name    string
	Columns []Column
}

// KeyValue is one entry of a file's key-value metadata.
type KeyValue struct {
	Key, Value string
}

// Options are a Writer's settings beyond its schema.
type Options struct {
	// RowsPerGroup bounds the rows of a row group, which a Writer holds in memory until the
	// group is complete. Zero means DefaultRowsPerGroup.
	RowsPerGroup int
	// Metadata is the file's key-value metadata.
	Metadata []KeyValue
	// CreatedBy names the application that wrote the file, in the footer's created_by.
	CreatedBy string
	// Codec compresses the data pages.
	Codec Codec
}

// Codec is how data pages are compressed.
type Codec uint8

// The codecs.
const (
	Uncompressed Codec = iota
	// Gzip compresses each page with compress/gzip at its fastest level: the format's GZIP
	// codec, which the common readers (DuckDB, Arrow, parquet-go) read.
	Gzip
)

// DefaultRowsPerGroup is the rows of a row group when Options.RowsPerGroup is zero.
const DefaultRowsPerGroup = 1 << 20

// pageBytes is the size of a column's values at which its data page is cut, so that a
// reader need not hold a whole column chunk to read a part of it.
const pageBytes = 1 << 20

// maxStatBytes bounds the length of a string column's min and max in the statistics; a
// chunk whose min or max is longer has none, rather than the footer holding long texts.
const maxStatBytes = 64

// Value is one cell of a row: null or a value of one of the types.
type Value struct {
	typ Type // zero for null
	num uint64
	str string
}

// Null returns the value of an empty cell of an optional column.
func Null() Value { return Value{} }

// Int64Value returns a value of an Int64 column.
func Int64Value(v int64) Value { return Value{typ: Int64, num: uint64(v)} }

// DoubleValue returns a value of a Double column.
func DoubleValue(v float64) Value { return Value{typ: Double, num: math.Float64bits(v)} }

// BooleanValue returns a value of a Boolean column.
func BooleanValue(v bool) Value {
	if v {
		return Value{typ: Boolean, num: 1}
	}
	return Value{typ: Boolean}
}

// StringValue returns a value of a String column.
func StringValue(v string) Value { return Value{typ: String, str: v} }

// TimestampValue returns a value of a Timestamp column: t.UnixNano(), which time defines for
// the years 1678 to 2262.
func TimestampValue(t time.Time) Value { return Value{typ: Timestamp, num: uint64(t.UnixNano())} }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.typ == 0 }

// Writer writes rows to a Parquet file. Rows are held in memory by row group, and a group
// is written when it is full and at Close, which writes the footer. A Writer is not safe for
// concurrent use.
type Writer struct {
	w         io.Writer
	schema    Schema
	opts      Options
	cols      []*column
	pos       int64 // bytes written to w
	rows      int64 // rows written, in all groups
	groupRows int   // rows of the group being filled
	groups    []rowGroup
	err       error // the first error, after which the Writer writes nothing
	closed    bool
	gz        *gzip.Writer // Gzip: reused from page to page
	zbuf      bytes.Buffer // Gzip: the page being compressed
}

// column is one column's state: the values of its current page and the pages of the
// current row group.
type column struct {
	Column
	values    []byte  // the PLAIN-encoded values of the current page
	bools     int     // Boolean: the values in values, eight to a byte
	defs      []uint8 // optional: the definition level of each row of the current page
	pageRows  int
	chunk     []byte // the current group's pages, each a header and its data
	chunkRaw  int64  // the size the chunk's pages would have uncompressed
	chunkRows int64
	nulls     int64
	stats     minMax
}

// minMax is the least and greatest value of a column chunk, in the PLAIN encoding of the
// column's type, which Statistics.min_value and max_value hold.
type minMax struct {
	has      bool
	min, max []byte
	i        [2]int64   // Int64, Timestamp, Boolean (0 or 1)
	f        [2]float64 // Double
}

// rowGroup is the footer's record of a written row group.
type rowGroup struct {
	rows   int64
	chunks []chunkMeta
}

// chunkMeta is the footer's record of a written column chunk.
type chunkMeta struct {
	offset, size, raw, values, nulls int64
	min, max                         []byte // nil: no min and max
}

// NewWriter returns a Writer of s to w. Column names must be unique and not empty.
func NewWriter(w io.Writer, s Schema, opts Options) (*Writer, error) {
	if opts.RowsPerGroup < 0 {
		return nil, fmt.Errorf("%d rows per group", opts.RowsPerGroup)
	}
	if opts.Codec > Gzip {
		return nil, fmt.Errorf("unknown codec %d", opts.Codec)
	}
	if opts.RowsPerGroup == 0 {
		opts.RowsPerGroup = DefaultRowsPerGroup
	}
	seen := map[string]bool{}
	pw := &Writer{w: w, schema: s, opts: opts}
	for i, c := range s.Columns {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("column %d: empty or repeated name %q", i, c.Name)
		}
		if c.Type < Int64 || c.Type > Timestamp {
			return nil, fmt.Errorf("column %s: unknown type %d", c.Name, c.Type)
		}
		seen[c.Name] = true
		pw.cols = append(pw.cols, &column{Column: c})
	}
	return pw, nil
}

// Write adds one row: a value for each column, in schema order, of the column's type or null
// in an optional column.
func (w *Writer) Write(row []Value) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("write after close")
	}
	if len(row) != len(w.cols) {
		return fmt.Errorf("a row of %d values for %d columns", len(row), len(w.cols))
	}
	// Check the whole row first, so that a refused row leaves no column half written.
	for i, c := range w.cols {
		v := row[i]
		if v.typ == 0 && !c.Optional {
			return fmt.Errorf("column %s: null in a required column", c.Name)
		}
		if v.typ != 0 && v.typ != c.Type {
			return fmt.Errorf("column %s: a value of type %v in a column of type %v", c.Name, v.typ, c.Type)
		}
	}
	for i, c := range w.cols {
		c.add(row[i])
		if len(c.values) >= pageBytes {
			if err := w.flushPage(c); err != nil {
				w.err = err
				return err
			}
		}
	}
	w.groupRows++
	w.rows++
	if w.groupRows == w.opts.RowsPerGroup {
		return w.flushGroup()
	}
	return nil
}

// add appends v to the column's current page and its statistics.
func (c *column) add(v Value) {
	c.pageRows++
	if c.Optional {
		if v.typ == 0 {
			c.defs = append(c.defs, 0)
			c.nulls++
			return
		}
		c.defs = append(c.defs, 1)
	}
	switch c.Type {
	case Int64, Timestamp:
		c.values = binary.LittleEndian.AppendUint64(c.values, v.num)
		c.stats.addInt(int64(v.num))
	case Double:
		c.values = binary.LittleEndian.AppendUint64(c.values, v.num)
		c.stats.addFloat(math.Float64frombits(v.num))
	case Boolean:
		if c.bools%8 == 0 {
			c.values = append(c.values, 0)
		}
		c.values[len(c.values)-1] |= byte(v.num) << (c.bools % 8)
		c.bools++
		c.stats.addInt(int64(v.num))
	case String:
		c.values = binary.LittleEndian.AppendUint32(c.values, uint32(len(v.str)))
		c.values = append(c.values, v.str...)
		c.stats.addString(v.str)
	}
}

func (m *minMax) addInt(v int64) {
	if !m.has {
		m.i = [2]int64{v, v}
		m.has = true
		return
	}
	m.i[0], m.i[1] = min(m.i[0], v), max(m.i[1], v)
}

// addFloat leaves NaN out, as the format asks: it has no place in the order of the other
// values.
func (m *minMax) addFloat(v float64) {
	if math.IsNaN(v) {
		return
	}
	if !m.has {
		m.f = [2]float64{v, v}
		m.has = true
		return
	}
	m.f[0], m.f[1] = min(m.f[0], v), max(m.f[1], v)
}

// addString compares strings as Go does, as unsigned bytes, the order the format defines for
// STRING.
func (m *minMax) addString(v string) {
	if !m.has {
		m.min = append(m.min[:0], v...)
		m.max = append(m.max[:0], v...)
		m.has = true
		return
	}
	if v < string(m.min) {
		m.min = append(m.min[:0], v...)
	} else if v > string(m.max) {
		m.max = append(m.max[:0], v...)
	}
}

// encoded returns the chunk's min and max in the PLAIN encoding of typ, or nils where it has
// none: all its values are null or NaN, or a string is too long.
func (m *minMax) encoded(typ Type) (lo, hi []byte) {
	if !m.has {
		return nil, nil
	}
	switch typ {
	case Int64, Timestamp:
		return binary.LittleEndian.AppendUint64(nil, uint64(m.i[0])), binary.LittleEndian.AppendUint64(nil, uint64(m.i[1]))
	case Boolean:
		return []byte{byte(m.i[0])}, []byte{byte(m.i[1])}
	case Double:
		// A zero min is written as -0 and a zero max as +0, as the format asks, so that a
		// reader that compares zeros by sign includes both.
		lo, hi := m.f[0], m.f[1]
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(lo)), binary.LittleEndian.AppendUint64(nil, math.Float64bits(hi))
	case String:
		if len(m.min) > maxStatBytes || len(m.max) > maxStatBytes {
			return nil, nil
		}
		// Not nil when empty: an empty string is a min like any other.
		return append([]byte{}, m.min...), append([]byte{}, m.max...)
	}
	return nil, nil
}

// flushPage appends the current page, if it has rows, to the column's chunk: a PageHeader,
// then for an optional column the definition levels with their 4-byte length, then the
// values.
func (w *Writer) flushPage(c *column) error {
	if c.pageRows == 0 {
		return nil
	}
	var levels []byte
	if c.Optional {
		levels = appendHybrid(make([]byte, 4, 4+len(c.defs)/8+16), c.defs, 1)
		binary.LittleEndian.PutUint32(levels, uint32(len(levels)-4))
	}
	size := len(levels) + len(c.values)
	if size > math.MaxInt32 {
		return fmt.Errorf("column %s: a page of %d bytes, more than a page can hold", c.Name, size)
	}
	body := [][]byte{levels, c.values}
	stored := size
	if w.opts.Codec == Gzip {
		w.zbuf.Reset()
		if w.gz == nil {
			w.gz, _ = gzip.NewWriterLevel(&w.zbuf, gzip.BestSpeed) // the level is valid
		} else {
			w.gz.Reset(&w.zbuf)
		}
		// Writing to a bytes.Buffer does not fail.
		w.gz.Write(levels)
		w.gz.Write(c.values)
		w.gz.Close()
		body, stored = [][]byte{w.zbuf.Bytes()}, w.zbuf.Len()
		if stored > math.MaxInt32 {
			return fmt.Errorf("column %s: a compressed page of %d bytes, more than a page can hold", c.Name, stored)
		}
	}
	var h compact
	h.beginStruct()
	h.i32Field(1, pageData)          // type
	h.i32Field(2, int32(size))       // uncompressed_page_size
	h.i32Field(3, int32(stored))     // compressed_page_size
	h.structField(5)                 // data_page_header
	h.i32Field(1, int32(c.pageRows)) // num_values, nulls included
	h.i32Field(2, encPlain)          // encoding
	h.i32Field(3, encRLE)            // definition_level_encoding
	h.i32Field(4, encRLE)            // repetition_level_encoding
	h.endStruct()
	h.endStruct()
	c.chunk = append(c.chunk, h.buf...)
	for _, b := range body {
		c.chunk = append(c.chunk, b...)
	}
	c.chunkRaw += int64(len(h.buf) + size)
	c.chunkRows += int64(c.pageRows)
	c.values, c.defs, c.bools, c.pageRows = c.values[:0], c.defs[:0], 0, 0
	return nil
}

// flushGroup writes the current row group, if it has rows: each column's chunk in turn.
func (w *Writer) flushGroup() error {
	if w.groupRows == 0 {
		return nil
	}
	if w.pos == 0 {
		if err := w.write([]byte("PAR1")); err != nil {
			return err
		}
	}
	g := rowGroup{rows: int64(w.groupRows)}
	for _, c := range w.cols {
		if err := w.flushPage(c); err != nil {
			w.err = err
			return err
		}
		m := chunkMeta{offset: w.pos, size: int64(len(c.chunk)), raw: c.chunkRaw, values: c.chunkRows, nulls: c.nulls}
		m.min, m.max = c.stats.encoded(c.Type)
		if err := w.write(c.chunk); err != nil {
			return err
		}
		g.chunks = append(g.chunks, m)
		c.chunk, c.chunkRaw, c.chunkRows, c.nulls = c.chunk[:0], 0, 0, 0
		c.stats.has = false
	}
	w.groups = append(w.groups, g)
	w.groupRows = 0
	return nil
}

// write writes b to the file and counts its bytes.
func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	w.pos += int64(n)
	if err != nil {
		w.err = fmt.Errorf("write: %w", err)
		return w.err
	}
	return nil
}

// Close writes the last row group and the footer. It does not close the underlying writer.
// A file without rows has a schema and no row groups.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.flushGroup(); err != nil {
		return err
	}
	if w.pos == 0 {
		if err := w.write([]byte("PAR1")); err != nil {
			return err
		}
	}
	footer := w.footer()
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(footer)))
	footer = append(footer, "PAR1"...)
	return w.write(footer)
}
