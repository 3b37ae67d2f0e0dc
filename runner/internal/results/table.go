package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Kind is the type of a CSV column, as an analysis tool should load it.
type Kind string

// The column kinds. A missing value is an empty cell in every kind.
const (
	KindInt    Kind = "int"       // a decimal integer
	KindFloat  Kind = "float"     // a decimal number, always written with a decimal point
	KindBool   Kind = "bool"      // true or false
	KindString Kind = "string"    // text, escaped so that it holds no line break
	KindTime   Kind = "timestamp" // RFC 3339 in UTC with nine fractional digits
)

// Column describes one column of a result file.
type Column struct {
	Name string
	Kind Kind
	// Required is set when every row has a value: the cell is never empty. Other columns may
	// have missing values in any row, or in every row.
	Required bool
	// Values, if set, are the only values a cell may hold (an enum): a reader refuses any
	// other, the empty cell included unless it is one of them.
	Values []string
	// NonNegative is set for a number that is never below zero, such as a duration from a
	// request's start.
	NonNegative bool
	// Unique is set for a column whose value names its row: no two rows of a file share one
	// (requests.csv's request_id). Every reader refuses a file where two rows do.
	Unique bool
}

// Allows reports whether cell holds a value that the column allows beyond its kind: one of
// Values where those are set, and not below zero where NonNegative is set. Every reader checks
// it, the folder's and the export's alike, so that they accept the same files.
func (c Column) Allows(cell string) error {
	if c.Values != nil && !slices.Contains(c.Values, cell) {
		return fmt.Errorf("unknown value %q (one of %s)", cell, strings.Join(quoted(c.Values), ", "))
	}
	if c.NonNegative && strings.HasPrefix(cell, "-") {
		return fmt.Errorf("negative value %s: it is never below zero", cell)
	}
	return nil
}

// quoted returns each value in quotes, the empty one as "".
func quoted(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Quote(v)
	}
	return out
}

// column binds a Column to a field of the row type T.
type column[T any] struct {
	Column
	get func(*T) string
	set func(*T, string) error
	// derived columns are written for the reader's convenience and skipped when decoding,
	// except that check, if set, verifies the cell against the decoded row.
	derived bool
	check   func(*T, string) error
	// late columns were added to the end of the table after files were written without them:
	// a file whose header lacks one reads it as a missing value.
	late bool
}

// addedLater marks columns as added to a table after files were written without them.
func addedLater[T any](cols ...column[T]) []column[T] {
	for i := range cols {
		cols[i].late = true
	}
	return cols
}

// Table is one CSV file of a result folder: its name and its ordered column list, from which
// the folder's writer, its readers, its data package (SchemaFile) and the conversions of
// package export all derive, so that they cannot disagree. Its first column is always
// schema_version, which the table writes and checks itself. Each file has one Table variable
// (RequestsCSV, EventsCSV, ...); folderTables lists them in the order the data package names
// them.
type Table[T any] struct {
	file string
	cols []column[T]
	// extra, if set, reads the cells of the columns that the table does not know, in file
	// order: configs.csv has one column per axis of its configs.
	extra func(v *T, names, vals []string) error
	// shape, if set, returns the table that Write uses for rows, where the columns depend on
	// the rows: configs.csv has a column per axis, load.csv the server's figures only where a
	// row has them.
	shape func(t *Table[T], rows []T) *Table[T]
	// optional files are written only once they have a row (telemetry.csv, load_server.csv):
	// the data package names them only where the folder has them.
	optional bool
	// inFolder, if set, returns the columns of the file in a folder whose configs are configs
	// and which holds the files that has reports, where those depend on the folder.
	inFolder func(t *Table[T], configs []ConfigRow, has func(file string) bool) []Column
}

// File returns the file's name in a result folder, e.g. requests.csv.
func (t *Table[T]) File() string { return t.file }

// Columns returns the file's columns in order, schema_version first.
func (t *Table[T]) Columns() []Column {
	out := []Column{{Name: "schema_version", Kind: KindInt, Required: true}}
	for _, c := range t.cols {
		out = append(out, c.Column)
	}
	return out
}

// ColumnsOf returns the columns that Write writes for rows, in order: Columns, except for a
// file whose columns depend on its rows (configs.csv, load.csv).
func (t *Table[T]) ColumnsOf(rows []T) []Column { return t.shaped(rows).Columns() }

// shaped returns the table that writes rows.
func (t *Table[T]) shaped(rows []T) *Table[T] {
	if t.shape != nil {
		return t.shape(t, rows)
	}
	return t
}

// NewEncoder returns an encoder of the file's rows that writes to w, with every column of
// Columns.
func (t *Table[T]) NewEncoder(w io.Writer) *Encoder[T] { return &Encoder[T]{w: w, t: t} }

// NewScanner returns a scanner of the file's rows read from r; name is the file name that
// errors carry.
func (t *Table[T]) NewScanner(r io.Reader, name string) *Scanner[T] {
	return newCSVScanner(r, name, t)
}

// Write writes a whole file of rows: its header, then the rows in order, the header even when
// there is no row. Its columns are ColumnsOf(rows).
func (t *Table[T]) Write(w io.Writer, rows []T) error { return writeAll(w, t.shaped(rows), rows) }

// schema describes the file in a folder whose configs are configs, for the data package; ok
// is false for an optional file that the folder lacks. has reports whether the folder holds a
// file; nil stands for a folder without any optional file.
func (t *Table[T]) schema(configs []ConfigRow, has func(file string) bool) (f FileSchema, ok bool) {
	if t.optional && (has == nil || !has(t.file)) {
		return FileSchema{}, false
	}
	if t.inFolder != nil {
		return FileSchema{t.file, t.inFolder(t, configs, has)}, true
	}
	return FileSchema{t.file, t.Columns()}, true
}

func (t *Table[T]) header() []string {
	var h []string
	for _, c := range t.Columns() {
		h = append(h, c.Name)
	}
	return h
}

func (t *Table[T]) row(v *T) []string {
	out := make([]string, 0, len(t.cols)+1)
	out = append(out, strconv.Itoa(FormatVersion))
	for _, c := range t.cols {
		out = append(out, c.get(v))
	}
	return out
}

// encodeCSV renders records as CSV lines, one line per record, in the runner's one dialect.
func encodeCSV(records ...[]string) []byte { return tabular.Lines(records...) }

// Encoder writes the rows of one result file as CSV to an io.Writer, the header before the
// first row. Each Encode is one Write call on the underlying writer.
type Encoder[T any] struct {
	w      io.Writer
	t      *Table[T]
	headed bool
}

// WriteHeader writes the header row, if it has not been written yet. Encode calls it; it is
// exported for files that must exist with a header before their first row.
func (e *Encoder[T]) WriteHeader() error {
	if e.headed {
		return nil
	}
	e.headed = true
	if _, err := e.w.Write(encodeCSV(e.t.header())); err != nil {
		return fmt.Errorf("write %s header: %w", e.t.file, err)
	}
	return nil
}

// writeAll writes a whole file of t: its header, then rows in order, the header even when
// there is no row.
func writeAll[T any](w io.Writer, t *Table[T], rows []T) error {
	e := &Encoder[T]{w: w, t: t}
	if err := e.WriteHeader(); err != nil {
		return err
	}
	for i := range rows {
		if err := e.Encode(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// Encode writes one row.
func (e *Encoder[T]) Encode(v *T) error {
	if err := e.WriteHeader(); err != nil {
		return err
	}
	if _, err := e.w.Write(encodeCSV(e.t.row(v))); err != nil {
		return fmt.Errorf("write %s row: %w", e.t.file, err)
	}
	return nil
}

// TornLineError reports a last line without its line break: the writer was killed in the
// middle of a write. Offset is the byte offset where the torn line starts, the length to which
// the file can be truncated to drop it.
type TornLineError struct {
	File   string
	Line   int
	Offset int64
}

func (e *TornLineError) Error() string {
	return fmt.Sprintf("%s:%d: torn last line (no line break at end of file): the writer stopped mid-write", e.File, e.Line)
}

// VersionError reports a file written in a format version this reader does not know.
type VersionError struct {
	File    string
	Line    int // 0 for a whole-file field such as the manifest's
	Version string
}

func (e *VersionError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: schema_version %s is not supported: this runner reads version %d; use a runner that knows version %s",
		loc, e.Version, FormatVersion, e.Version)
}

// lastByteReader remembers the last byte read, to tell whether the input ended with a line
// break.
type lastByteReader struct {
	r    io.Reader
	last byte
	any  bool
	eof  bool
}

func (l *lastByteReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.last, l.any = p[n-1], true
	}
	if err == io.EOF {
		l.eof = true
	}
	return n, err
}

// torn reports whether the input has ended, and ended without a line break.
func (l *lastByteReader) torn() bool { return l.eof && l.any && l.last != '\n' }

// Scanner reads the rows of one result file, in the manner of bufio.Scanner: call Scan until it
// returns false, read each row with Record, then check Err. Errors name the file and line
// ("requests.csv:17: ttft_ms: ..."). A last line without its line break ends the scan with a
// *TornLineError, and a schema_version this reader does not know with a *VersionError.
type Scanner[T any] struct {
	next func() (T, int, int64, error) // the row, its line, its start offset; io.EOF at the end
	name string

	rec     T
	line    int
	offset  int64
	err     error
	done    bool
	peeked  bool
	pRec    T
	pLine   int
	pOffset int64
	pErr    error
	atEOF   func() bool // reports whether the input ended without a line break
}

// Scan advances to the next row. It returns false at the end of the file or on an error.
func (s *Scanner[T]) Scan() bool {
	if s.done {
		return false
	}
	var rec T
	var line int
	var off int64
	var err error
	if s.peeked {
		rec, line, off, err = s.pRec, s.pLine, s.pOffset, s.pErr
		s.peeked = false
	} else {
		rec, line, off, err = s.next()
	}
	if err == io.EOF {
		s.done = true
		return false
	}
	// Look one row ahead: only the last row can be torn, and only the end of the input tells.
	s.pRec, s.pLine, s.pOffset, s.pErr = s.next()
	s.peeked = true
	if s.pErr == io.EOF && s.atEOF() {
		s.done = true
		s.err = &TornLineError{File: s.name, Line: line, Offset: off}
		return false
	}
	if err != nil {
		s.done = true
		s.err = err
		return false
	}
	s.rec, s.line, s.offset = rec, line, off
	return true
}

// Record returns the row that the last successful Scan read.
func (s *Scanner[T]) Record() T { return s.rec }

// Line returns the line number of the row that the last successful Scan read.
func (s *Scanner[T]) Line() int { return s.line }

// Offset returns the byte offset at which the row that the last successful Scan read starts.
func (s *Scanner[T]) Offset() int64 { return s.offset }

// Err returns the error that ended the scan, or nil at a clean end of file.
func (s *Scanner[T]) Err() error { return s.err }

// newCSVScanner returns a scanner of the CSV file name over r with the columns of t.
func newCSVScanner[T any](r io.Reader, name string, t *Table[T]) *Scanner[T] {
	lb := &lastByteReader{r: CapLines(r, name)}
	cr := csv.NewReader(lb)
	cr.ReuseRecord = false
	c := &csvRows[T]{cr: cr, name: name, t: t}
	return &Scanner[T]{name: name, next: c.next, atEOF: lb.torn}
}

// csvRows reads the rows of one CSV file of table t: the header first, which says where each
// of t's columns is, then one row at a time.
type csvRows[T any] struct {
	cr   *csv.Reader
	name string
	t    *Table[T]

	headerDone bool
	header     []string
	idx        []int // file position of each table column, -1 where the file lacks it
	extraIdx   []int // file positions of columns the table does not know
	versionAt  int
	fatal      error // a bad header ends the file for good
}

// fail returns an error that names the file and line.
func (c *csvRows[T]) fail(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", c.name, line, fmt.Sprintf(format, args...))
}

// next returns the next row, its line and its start offset; io.EOF at the end.
func (c *csvRows[T]) next() (T, int, int64, error) {
	var zero T
	if c.fatal != nil {
		return zero, 0, 0, c.fatal
	}
	for {
		off := c.cr.InputOffset()
		fields, err := c.cr.Read()
		line := 0
		if err == nil {
			line, _ = c.cr.FieldPos(0)
		}
		if err == io.EOF && !c.headerDone {
			c.fatal = fmt.Errorf("%s:1: empty file: no header row", c.name)
			return zero, 1, off, c.fatal
		}
		if err == io.EOF {
			return zero, 0, off, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			var capped *LineCapError
			if errors.As(err, &capped) {
				line = capped.Line
			} else if errors.As(err, &pe) {
				err = fmt.Errorf("%s:%d: %w", c.name, pe.StartLine, pe.Err)
				line = pe.StartLine
			} else {
				err = fmt.Errorf("%s: %w", c.name, err)
			}
			if !c.headerDone {
				c.fatal = err
			}
			return zero, line, off, err
		}
		if !c.headerDone {
			c.headerDone = true
			if err := c.readHeader(fields, line); err != nil {
				c.fatal = err
				return zero, line, off, err
			}
			continue
		}
		rec, err := c.decode(fields, line)
		return rec, line, off, err
	}
}

// readHeader finds the position of each of the table's columns in the header fields.
func (c *csvRows[T]) readHeader(fields []string, line int) error {
	c.header = fields
	pos := map[string]int{}
	for i, h := range fields {
		if _, dup := pos[h]; dup {
			return c.fail(line, "column %q appears twice", h)
		}
		pos[h] = i
	}
	p, ok := pos["schema_version"]
	if !ok {
		return c.fail(line, "no schema_version column: not a result file of this format")
	}
	c.versionAt = p
	known := map[string]bool{"schema_version": true}
	c.idx = make([]int, len(c.t.cols))
	for i, col := range c.t.cols {
		known[col.Name] = true
		p, ok := pos[col.Name]
		switch {
		case ok:
			c.idx[i] = p
		case col.derived, col.late:
			c.idx[i] = -1
		default:
			return c.fail(line, "missing column %s", col.Name)
		}
	}
	for i, h := range fields {
		if !known[h] {
			c.extraIdx = append(c.extraIdx, i)
		}
	}
	return nil
}

// decode reads one row's fields into a record.
func (c *csvRows[T]) decode(fields []string, line int) (T, error) {
	var zero, rec T
	if v := fields[c.versionAt]; v != strconv.Itoa(FormatVersion) {
		if v == "" {
			v = `""`
		}
		return zero, &VersionError{File: c.name, Line: line, Version: v}
	}
	for i, col := range c.t.cols {
		if c.idx[i] < 0 {
			continue
		}
		cell := fields[c.idx[i]]
		if err := col.Allows(cell); err != nil {
			return zero, c.fail(line, "%s: %v", col.Name, err)
		}
		if col.derived {
			// Not decoded, but a derived cell must still be a value of its kind.
			if err := checkKind(col.Column, cell); err != nil {
				return zero, c.fail(line, "%s: %v", col.Name, err)
			}
			continue
		}
		if err := col.set(&rec, cell); err != nil {
			return zero, c.fail(line, "%s: %v", col.Name, err)
		}
	}
	for i, col := range c.t.cols {
		if col.check != nil && c.idx[i] >= 0 {
			if err := col.check(&rec, fields[c.idx[i]]); err != nil {
				return zero, c.fail(line, "%s: %v", col.Name, err)
			}
		}
	}
	if c.t.extra != nil {
		names := make([]string, len(c.extraIdx))
		vals := make([]string, len(c.extraIdx))
		for j, p := range c.extraIdx {
			names[j], vals[j] = c.header[p], fields[p]
		}
		if err := c.t.extra(&rec, names, vals); err != nil {
			return zero, c.fail(line, "%v", err)
		}
	}
	return rec, nil
}

// checkKind reports whether cell is a value of the column c's kind, and not empty where c
// always has a value.
func checkKind(c Column, cell string) error {
	if cell == "" && c.Required {
		return errors.New("empty cell in a column that always has a value")
	}
	_, err := c.Kind.Parse(cell)
	return err
}

// Parse reads one cell of a column of kind k as this package writes it. It returns nil for an
// empty cell (a missing value), and otherwise an int64, a float64, a bool, a time.Time in UTC,
// or for a string the cell as it stands in the file, escapes included, so that a reader of a
// converted file sees the same text as a reader of the CSV.
func (k Kind) Parse(cell string) (any, error) {
	if cell == "" {
		return nil, nil
	}
	switch k {
	case KindInt:
		n, err := strconv.ParseInt(cell, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer: %q", cell)
		}
		return n, nil
	case KindFloat:
		return parseFloat(cell)
	case KindBool:
		return parseBool(cell)
	case KindTime:
		return parseTime(cell)
	case KindString:
		return cell, nil
	}
	return nil, fmt.Errorf("unknown column kind %q", k)
}
