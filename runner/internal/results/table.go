package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

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

// schema describes the file in the folder dir whose configs are configs, for the data package;
// ok is false for an optional file that the folder lacks. has reports whether the folder holds
// a file; nil stands for a folder without any optional file.
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
	lb := &lastByteReader{r: r}
	cr := csv.NewReader(lb)
	cr.ReuseRecord = false
	s := &Scanner[T]{name: name}
	s.atEOF = lb.torn

	var idx []int // file position of each table column
	var header []string
	var extraIdx []int // file positions of columns the table does not know
	headerDone := false
	versionAt := 0
	var fatal error // a bad header ends the file for good
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	readHeader := func(fields []string, line int) error {
		header = fields
		pos := map[string]int{}
		for i, h := range fields {
			if _, dup := pos[h]; dup {
				return fail(line, "column %q appears twice", h)
			}
			pos[h] = i
		}
		p, ok := pos["schema_version"]
		if !ok {
			return fail(line, "no schema_version column: not a result file of this format")
		}
		versionAt = p
		known := map[string]bool{"schema_version": true}
		idx = make([]int, len(t.cols))
		for i, c := range t.cols {
			known[c.Name] = true
			p, ok := pos[c.Name]
			switch {
			case ok:
				idx[i] = p
			case c.derived, c.late:
				idx[i] = -1
			default:
				return fail(line, "missing column %s", c.Name)
			}
		}
		for i, h := range fields {
			if !known[h] {
				extraIdx = append(extraIdx, i)
			}
		}
		return nil
	}
	s.next = func() (T, int, int64, error) {
		var zero T
		if fatal != nil {
			return zero, 0, 0, fatal
		}
		for {
			off := cr.InputOffset()
			fields, err := cr.Read()
			line := 0
			if err == nil {
				line, _ = cr.FieldPos(0)
			}
			if err == io.EOF && !headerDone {
				fatal = fmt.Errorf("%s:1: empty file: no header row", name)
				return zero, 1, off, fatal
			}
			if err == io.EOF {
				return zero, 0, off, io.EOF
			}
			if err != nil {
				var pe *csv.ParseError
				if errors.As(err, &pe) {
					err = fmt.Errorf("%s:%d: %w", name, pe.StartLine, pe.Err)
					line = pe.StartLine
				} else {
					err = fmt.Errorf("%s: %w", name, err)
				}
				if !headerDone {
					fatal = err
				}
				return zero, line, off, err
			}
			if !headerDone {
				headerDone = true
				if err := readHeader(fields, line); err != nil {
					fatal = err
					return zero, line, off, err
				}
				continue
			}
			if v := fields[versionAt]; v != strconv.Itoa(FormatVersion) {
				if v == "" {
					v = `""`
				}
				return zero, line, off, &VersionError{File: name, Line: line, Version: v}
			}
			var rec T
			for i, c := range t.cols {
				if c.derived || idx[i] < 0 {
					continue
				}
				if err := c.set(&rec, fields[idx[i]]); err != nil {
					return zero, line, off, fail(line, "%s: %v", c.Name, err)
				}
			}
			for i, c := range t.cols {
				if c.check != nil && idx[i] >= 0 {
					if err := c.check(&rec, fields[idx[i]]); err != nil {
						return zero, line, off, fail(line, "%s: %v", c.Name, err)
					}
				}
			}
			if t.extra != nil {
				names := make([]string, len(extraIdx))
				vals := make([]string, len(extraIdx))
				for j, p := range extraIdx {
					names[j], vals[j] = header[p], fields[p]
				}
				if err := t.extra(&rec, names, vals); err != nil {
					return zero, line, off, fail(line, "%v", err)
				}
			}
			return rec, line, off, nil
		}
	}
	return s
}

// Column constructors. Each binds a column name to a field through an accessor that returns
// the field's address, so one function serves both directions.

func intCol[T any](name string, f func(*T) *int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt, Required: true},
		get: func(v *T) string { return formatInt(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseInt(s); return err }}
}

// zeroIsMissingIntCol writes 0 as an empty cell, for fields where 0 means "no value".
func zeroIsMissingIntCol[T any](name string, f func(*T) *int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt},
		get: func(v *T) string {
			if *f(v) == 0 {
				return ""
			}
			return formatInt(*f(v))
		},
		set: func(v *T, s string) (err error) {
			if s == "" {
				*f(v) = 0
				return nil
			}
			*f(v), err = parseInt(s)
			return err
		}}
}

func optIntCol[T any](name string, f func(*T) **int) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindInt},
		get: func(v *T) string { return formatOptInt(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseOptInt(s); return err }}
}

func msCol[T any](name string, f func(*T) **time.Duration) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return formatMs(*p)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			d, err := parseMs(s)
			if err != nil {
				return err
			}
			*f(v) = &d
			return nil
		}}
}

func reqMsCol[T any](name string, f func(*T) *time.Duration) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat, Required: true},
		get: func(v *T) string { return formatMs(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseMs(s); return err }}
}

func floatCol[T any](name string, decimals int, f func(*T) *float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string { return tabular.Float(*f(v), decimals) },
		set: func(v *T, s string) (err error) { *f(v), err = parseFloat(s); return err }}
}

func boolCol[T any](name string, f func(*T) *bool) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindBool, Required: true},
		get: func(v *T) string { return formatBool(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseBool(s); return err }}
}

// optBoolCol is a bool column whose value may be unknown (nil): an empty cell.
func optBoolCol[T any](name string, f func(*T) **bool) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindBool},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return formatBool(*p)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			b, err := parseBool(s)
			if err != nil {
				return err
			}
			*f(v) = &b
			return nil
		}}
}

func timeCol[T any](name string, f func(*T) *time.Time) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindTime},
		get: func(v *T) string { return formatTime(*f(v)) },
		set: func(v *T, s string) (err error) { *f(v), err = parseTime(s); return err }}
}

func strCol[T any](name string, f func(*T) *string) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string { return escapeCell(*f(v), "") },
		set: func(v *T, s string) (err error) { *f(v), err = unescapeCell(s); return err }}
}

// typedStrCol is strCol for the string-based enum types of package record.
func typedStrCol[T any, S ~string](name string, f func(*T) *S) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string { return escapeCell(string(*f(v)), "") },
		set: func(v *T, s string) error {
			u, err := unescapeCell(s)
			*f(v) = S(u)
			return err
		}}
}

// listCol stores a list of short texts in one cell, joined by "; "; each item is escaped with
// ';' as \x3b so that the join is unambiguous. Empty items are not kept.
func listCol[T any](name string, f func(*T) *[]string) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindString},
		get: func(v *T) string {
			var parts []string
			for _, s := range *f(v) {
				if s != "" {
					parts = append(parts, escapeCell(s, ";"))
				}
			}
			return strings.Join(parts, "; ")
		},
		set: func(v *T, s string) error {
			*f(v) = nil
			if s == "" {
				return nil
			}
			for _, p := range strings.Split(s, "; ") {
				u, err := unescapeCell(p)
				if err != nil {
					return err
				}
				*f(v) = append(*f(v), u)
			}
			return nil
		}}
}

// zeroIsMissingFloatCol writes 0 as an empty cell, for fields where 0 means "no value".
func zeroIsMissingFloatCol[T any](name string, decimals int, f func(*T) *float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if *f(v) == 0 {
				return ""
			}
			return tabular.Float(*f(v), decimals)
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = 0
				return nil
			}
			x, err := parseFloat(s)
			*f(v) = x
			return err
		}}
}

func optFloatCol[T any](name string, decimals int, f func(*T) **float64) column[T] {
	return column[T]{Column: Column{Name: name, Kind: KindFloat},
		get: func(v *T) string {
			if p := *f(v); p != nil {
				return tabular.Float(*p, decimals)
			}
			return ""
		},
		set: func(v *T, s string) error {
			if s == "" {
				*f(v) = nil
				return nil
			}
			x, err := parseFloat(s)
			if err != nil {
				return err
			}
			*f(v) = &x
			return nil
		}}
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
