// Package export converts the CSV files of a result folder into other file formats, with the
// column types of the tables that wrote them.
package export

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/parquet"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// ParquetDir is the folder inside a result folder where Parquet writes by default.
const ParquetDir = "parquet"

// rowsPerGroup bounds the rows of one Parquet row group, and so the memory a conversion holds.
const rowsPerGroup = 1 << 20

// createdBy is the application that the files' footers name as their writer.
const createdBy = "github.com/onelayerdown/runner"

// File is one Parquet file that Parquet wrote.
type File struct {
	CSV     string // the CSV file's name in the result folder, e.g. requests.csv
	Path    string // the Parquet file's path
	Rows    int
	Columns int
}

// Report is what Parquet did.
type Report struct {
	Files []File
	Notes []string // what it skipped, one sentence each: a file not in the folder, a torn last line
}

// Parquet writes each CSV file of the result folder dir as a Parquet file in out
// (requests.csv as out/requests.parquet), and creates out if needed. The column types come
// from the tables that write the CSV files, never from the text: an integer column is INT64
// even when every cell is empty, a float DOUBLE, a bool BOOLEAN, a timestamp INT64
// TIMESTAMP(NANOS, UTC), a string BYTE_ARRAY STRING holding the cell's text as in the CSV. A
// column whose cells can be empty is optional, and an empty cell is null; the others are
// required. Each file is written to a temporary name and renamed, so a file of a given name
// is either an earlier export's or complete. A summary.csv or load.csv that the folder does not
// have (an interrupted run, or a folder older than load.csv) is skipped with a note, as is a torn last line of a folder whose writer
// died.
func Parquet(dir, out string) (*Report, error) {
	r, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	tolerant := r.Status() == results.StatusRunning || r.Status() == results.StatusInterrupted
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	rep := &Report{}
	for _, f := range r.Schema() {
		src := filepath.Join(dir, f.File)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) && (f.File == results.SummaryFile || f.File == results.LoadFile) {
			why := "it is written when a run finishes"
			if f.File == results.LoadFile {
				why += "; folders written before it existed lack it"
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: not in the folder (%s); skipped", f.File, why))
			continue
		}
		dst := filepath.Join(out, strings.TrimSuffix(f.File, ".csv")+".parquet")
		n, notes, err := convertFile(src, dst, f, tolerant)
		if err != nil {
			return nil, err
		}
		rep.Notes = append(rep.Notes, notes...)
		rep.Files = append(rep.Files, File{CSV: f.File, Path: dst, Rows: n, Columns: len(f.Columns)})
	}
	return rep, nil
}

// convertFile writes the CSV file src, described by f, as the Parquet file dst and returns
// the number of rows.
func convertFile(src, dst string, f results.FileSchema, tolerant bool) (rows int, notes []string, err error) {
	in, err := results.OpenRegular(src)
	if err != nil {
		return 0, nil, err
	}
	defer in.Close()
	body, note, err := completeLines(in, f.File, tolerant)
	if err != nil {
		return 0, nil, err
	}
	if note != "" {
		notes = append(notes, note)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	rows, unknown, err := writeParquet(tmp, body, f)
	if err != nil {
		return 0, nil, err
	}
	if len(unknown) > 0 {
		left := fmt.Sprintf("%s: column %s is not of this format and is left out of %s", f.File,
			strings.Join(unknown, ", "), filepath.Base(dst))
		if len(unknown) > 1 {
			left = fmt.Sprintf("%s: columns %s are not of this format and are left out of %s", f.File,
				strings.Join(unknown, ", "), filepath.Base(dst))
		}
		notes = append(notes, left)
	}
	if err = tmp.Close(); err != nil {
		return 0, nil, fmt.Errorf("write %s: %w", dst, err)
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil { // CreateTemp makes it private
		return 0, nil, err
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return 0, nil, err
	}
	return rows, notes, nil
}

// completeLines returns a reader of the file's complete lines. A last line without its line
// break is a write cut short: with tolerant it is left out and described in note, otherwise
// it is an error.
func completeLines(file *os.File, name string, tolerant bool) (io.Reader, string, error) {
	st, err := file.Stat()
	if err != nil {
		return nil, "", err
	}
	size := st.Size()
	if size == 0 {
		return file, "", nil
	}
	var last [1]byte
	if _, err := file.ReadAt(last[:], size-1); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	if last[0] == '\n' {
		return file, "", nil
	}
	if !tolerant {
		return nil, "", fmt.Errorf("%s: torn last line (no line break at end of file) in a folder whose run finished", name)
	}
	// Find the last line break; everything after it is the torn line.
	const chunk = 64 << 10
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		buf := make([]byte, end-start)
		if _, err := file.ReadAt(buf, start); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return io.NewSectionReader(file, 0, start+int64(i)+1),
				fmt.Sprintf("%s: skipped a torn last line (the writer stopped mid-write)", name), nil
		}
		end = start
	}
	return nil, "", fmt.Errorf("%s: torn header line", name)
}

// WriteParquet reads the CSV file described by f from r and writes it to w as Parquet, with
// the column types of f (see Parquet), and returns the number of rows. It finds f's columns
// in the header by name, as the readers of a folder do: their order in the file does not
// matter, a column the file lacks is null in every row (which only an optional column
// allows), and a column that f does not know is left out. It checks every row's
// schema_version.
func WriteParquet(w io.Writer, r io.Reader, f results.FileSchema) (int, error) {
	n, _, err := writeParquet(w, r, f)
	return n, err
}

// writeParquet is WriteParquet, which also returns the names of the file's columns that f
// does not know and the Parquet file leaves out.
func writeParquet(w io.Writer, r io.Reader, f results.FileSchema) (int, []string, error) {
	cr := csv.NewReader(results.CapLines(r, f.File))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return 0, nil, fmt.Errorf("%s:1: empty file: no header row", f.File)
	}
	if err != nil {
		return 0, nil, csvError(f.File, err)
	}
	at, unknown, err := columnPositions(f, header)
	if err != nil {
		return 0, nil, err
	}
	n, err := writeRows(w, cr, f, at)
	return n, unknown, err
}

// columnPositions finds each column of f in the header: its position in the file, or -1
// where the file lacks it. It returns the names of the header's columns that f does not know,
// in file order.
func columnPositions(f results.FileSchema, header []string) (at []int, unknown []string, err error) {
	pos := map[string]int{}
	for i, h := range header {
		if _, dup := pos[h]; dup {
			return nil, nil, fmt.Errorf("%s:1: column %q appears twice", f.File, h)
		}
		pos[h] = i
	}
	known := map[string]bool{}
	for _, c := range f.Columns {
		known[c.Name] = true
		p, ok := pos[c.Name]
		switch {
		case ok:
			at = append(at, p)
		case c.Required:
			return nil, nil, fmt.Errorf("%s:1: missing column %s", f.File, c.Name)
		default:
			// A file written before the column was added: null in every row.
			at = append(at, -1)
		}
	}
	for _, h := range header {
		if !known[h] {
			unknown = append(unknown, h)
		}
	}
	return at, unknown, nil
}

// writeRows writes the rows that cr reads, whose cell of f's column i is at position at[i],
// to w as Parquet.
func writeRows(w io.Writer, cr *csv.Reader, f results.FileSchema, at []int) (int, error) {
	pw, err := parquet.NewWriter(w, ParquetSchema(f), parquet.Options{
		RowsPerGroup: rowsPerGroup,
		Metadata: []parquet.KeyValue{
			{Key: "runner.schema_version", Value: strconv.Itoa(results.FormatVersion)},
			{Key: "runner.source", Value: f.File}},
		CreatedBy: createdBy,
		Codec:     parquet.Gzip,
	})
	if err != nil {
		return 0, fmt.Errorf("write %s as parquet: %w", f.File, err)
	}
	version := strconv.Itoa(results.FormatVersion)
	row := make([]parquet.Value, len(f.Columns))
	n := 0
	// The values seen so far of each column whose value names its row, with their lines.
	seen := map[int]map[string]int{}
	for i, c := range f.Columns {
		if c.Unique {
			seen[i] = map[string]int{}
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, csvError(f.File, err)
		}
		line, _ := cr.FieldPos(0)
		if v := rec[at[0]]; v != version {
			if v == "" {
				v = `""`
			}
			return 0, &results.VersionError{File: f.File, Line: line, Version: v}
		}
		for i, c := range f.Columns {
			cell := ""
			if at[i] >= 0 {
				cell = rec[at[i]]
			}
			v, err := cellValue(c, cell)
			if err != nil {
				return 0, fmt.Errorf("%s:%d: %s: %w", f.File, line, c.Name, err)
			}
			if s := seen[i]; s != nil {
				if first, dup := s[cell]; dup {
					return 0, fmt.Errorf("%s:%d: %s: %s appears twice (also on line %d)", f.File, line, c.Name, cell, first)
				}
				s[cell] = line
			}
			row[i] = v
		}
		if err := pw.Write(row); err != nil {
			return 0, fmt.Errorf("write %s as parquet: %w", f.File, err)
		}
		n++
	}
	if err := pw.Close(); err != nil {
		return 0, fmt.Errorf("write %s as parquet: %w", f.File, err)
	}
	return n, nil
}

// csvError names the file in an error of its CSV reader, unless the error names it already.
func csvError(file string, err error) error {
	var capped *results.LineCapError
	if errors.As(err, &capped) {
		return err
	}
	return fmt.Errorf("%s: %w", file, err)
}

// cellValue converts one CSV cell of column c to a Parquet value.
func cellValue(c results.Column, cell string) (parquet.Value, error) {
	v, err := c.Kind.Parse(cell)
	if err != nil {
		return parquet.Value{}, err
	}
	if err := c.Allows(cell); err != nil {
		return parquet.Value{}, err
	}
	switch x := v.(type) {
	case nil:
		if c.Required {
			return parquet.Value{}, errors.New("empty cell in a column that always has a value")
		}
		return parquet.Null(), nil
	case int64:
		return parquet.Int64Value(x), nil
	case float64:
		return parquet.DoubleValue(x), nil
	case bool:
		return parquet.BooleanValue(x), nil
	case time.Time:
		return parquet.TimestampValue(x), nil
	case string:
		return parquet.StringValue(x), nil
	}
	return parquet.Value{}, fmt.Errorf("unexpected value %T", v)
}

// ParquetSchema returns the Parquet schema of the CSV file f: one column per CSV column, in
// the same order, with the types that Parquet describes.
func ParquetSchema(f results.FileSchema) parquet.Schema {
	s := parquet.Schema{Name: strings.TrimSuffix(f.File, ".csv")}
	for _, c := range f.Columns {
		col := parquet.Column{Name: c.Name, Optional: !c.Required}
		switch c.Kind {
		case results.KindInt:
			col.Type = parquet.Int64
		case results.KindFloat:
			col.Type = parquet.Double
		case results.KindBool:
			col.Type = parquet.Boolean
		case results.KindTime:
			col.Type = parquet.Timestamp
		default:
			col.Type = parquet.String
		}
		s.Columns = append(s.Columns, col)
	}
	return s
}
