// Package tabular holds the conventions that every table the runner writes follows, whatever
// its format: one CSV dialect, a missing value as an empty cell or a JSON null, warnings grouped
// per config below a table, write errors kept rather than dropped, and one way of choosing a
// table's output format by name (Formats).
//
// It sits below every package that writes a table (results, decompose, compare, plan, summary)
// and imports none of them.
package tabular

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Lines renders CSV records, each as one line with its line break: comma-separated, a field
// quoted only where it holds a comma, a quote or a line break, lines ended by "\n". It is the
// dialect of every CSV file and CSV output of the runner.
func Lines(records ...[]string) []byte {
	var buf bytes.Buffer
	_ = csv.NewWriter(&buf).WriteAll(records) // writing to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// WriteCSV writes a header and rows in the dialect of Lines and returns the first write error.
func WriteCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Float formats a number for a CSV cell: with a fixed number of decimals, so that a column
// reads as floats even when every value is whole, or in the shortest form that reads back
// exactly when decimals is negative. NaN and the infinities are a missing value: an empty cell.
func Float(x float64, decimals int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// Null returns x for a JSON number, or nil, which encodes as null, when x is NaN or infinite:
// a missing value.
func Null(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// List returns xs for a JSON array, or an empty list when xs is nil, so that a list with
// nothing in it encodes as [] rather than null.
func List(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// Plural formats a count with its noun, adding an s unless the count is 1: "1 config",
// "3 configs".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ErrWriter remembers the first error of the writer it wraps and writes nothing after it, so
// that an encoder can write freely and check once, with Err.
type ErrWriter struct {
	w   io.Writer
	err error
}

// NewErrWriter returns an ErrWriter over w.
func NewErrWriter(w io.Writer) *ErrWriter { return &ErrWriter{w: w} }

// Write writes p unless an earlier write failed.
func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Err returns the first write error, or nil.
func (e *ErrWriter) Err() error { return e.err }
