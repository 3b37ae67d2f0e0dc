package compare

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/stats"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// CSVColumns are the columns of the csv format, in order.
var CSVColumns = []string{
	"config_id", "label", "metric", "unit", "presence",
	"old_n", "old_failed", "old_median", "old_ci_low", "old_ci_high",
	"new_n", "new_failed", "new_median", "new_ci_low", "new_ci_high",
	"change_pct", "p_value", "test", "min_p", "significant", "verdict", "threshold", "gate", "warnings",
}

// CSVEncoder writes the rows of a Report as CSV, one line per config and metric, configs on
// one side only included (their presence says so). Numbers are written in the shortest form
// that reads back exactly, without exponent; a missing value is an empty cell; warnings are
// joined by "; ", with a backslash before any ';' or '\' inside one. The folders, the
// environment and the gate are in the json format only.
type CSVEncoder struct{ w io.Writer }

// NewCSVEncoder returns a CSVEncoder writing to w.
func NewCSVEncoder(w io.Writer) *CSVEncoder { return &CSVEncoder{w: w} }

// Encode writes the header and r's rows.
func (e *CSVEncoder) Encode(r *Report) error {
	rows := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		rows = append(rows, []string{
			row.ConfigID, row.Label, row.Metric, row.Unit, string(row.Presence),
			strconv.Itoa(row.Old.N), strconv.Itoa(row.Old.Failed), csvFloat(row.Old.Median), csvFloat(row.Old.CILow), csvFloat(row.Old.CIHigh),
			strconv.Itoa(row.New.N), strconv.Itoa(row.New.Failed), csvFloat(row.New.Median), csvFloat(row.New.CILow), csvFloat(row.New.CIHigh),
			csvFloat(row.ChangePct), csvFloat(row.P), string(row.Test), csvFloat(row.MinP), strconv.FormatBool(row.Significant),
			string(row.Verdict), row.Threshold, string(row.Gate), joinWarnings(row.Warnings),
		})
	}
	return tabular.WriteCSV(e.w, CSVColumns, rows)
}

// csvFloat writes a number in the shortest form that reads back exactly; a missing value is an
// empty cell.
func csvFloat(x float64) string { return tabular.Float(x, -1) }

func joinWarnings(ws []string) string {
	esc := strings.NewReplacer(`\`, `\\`, ";", `\;`)
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = esc.Replace(w)
	}
	return strings.Join(parts, "; ")
}

// splitWarnings reverses joinWarnings.
func splitWarnings(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != ';') {
				return nil, errors.New("a backslash not before ';' or '\\'")
			}
			i++
			b.WriteByte(s[i])
		case c == ';':
			if i+1 >= len(s) || s[i+1] != ' ' {
				return nil, errors.New("a ';' not followed by a space")
			}
			out = append(out, b.String())
			b.Reset()
			i++
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String()), nil
}

// ReadCSV reads rows that CSVEncoder wrote; name is the file name that errors carry. The header
// must be CSVColumns.
func ReadCSV(r io.Reader, name string) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(CSVColumns)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: empty file: no header row", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, h := range header {
		if h != CSVColumns[i] {
			return nil, fmt.Errorf("%s:1: column %d is %q, want %q", name, i+1, h, CSVColumns[i])
		}
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		row, err := parseCSVRow(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		rows = append(rows, row)
	}
}

func parseCSVRow(rec []string) (Row, error) {
	var row Row
	var err error
	field := func(i int) string { return rec[i] }
	fail := func(i int, e error) error { return fmt.Errorf("%s: %w", CSVColumns[i], e) }
	intAt := func(i int, dst *int) {
		if err != nil {
			return
		}
		n, e := strconv.Atoi(field(i))
		if e != nil || n < 0 {
			err = fail(i, fmt.Errorf("not a count: %q", field(i)))
		}
		*dst = n
	}
	floatAt := func(i int, dst *float64) {
		if err != nil {
			return
		}
		if field(i) == "" {
			*dst = math.NaN()
			return
		}
		x, e := strconv.ParseFloat(field(i), 64)
		if e != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			err = fail(i, fmt.Errorf("not a finite number: %q", field(i)))
		}
		*dst = x
	}
	oneOf := func(i int, allowed ...string) string {
		for _, a := range allowed {
			if field(i) == a {
				return a
			}
		}
		if err == nil {
			err = fail(i, fmt.Errorf("%q is not one of %s", field(i), strings.Join(allowed, ", ")))
		}
		return ""
	}
	row.ConfigID, row.Label, row.Metric = field(0), field(1), field(2)
	row.Unit = oneOf(3, "ms", "count")
	row.Presence = Presence(oneOf(4, string(Both), string(OldOnly), string(NewOnly)))
	intAt(5, &row.Old.N)
	intAt(6, &row.Old.Failed)
	floatAt(7, &row.Old.Median)
	floatAt(8, &row.Old.CILow)
	floatAt(9, &row.Old.CIHigh)
	intAt(10, &row.New.N)
	intAt(11, &row.New.Failed)
	floatAt(12, &row.New.Median)
	floatAt(13, &row.New.CILow)
	floatAt(14, &row.New.CIHigh)
	floatAt(15, &row.ChangePct)
	floatAt(16, &row.P)
	row.Test = stats.Method(oneOf(17, "", string(stats.MethodExact), string(stats.MethodNormal)))
	floatAt(18, &row.MinP)
	row.Significant = oneOf(19, "true", "false") == "true"
	row.Verdict = Verdict(oneOf(20, string(Same), string(Worse), string(Better), string(Changed), string(Untested)))
	row.Threshold = field(21)
	row.Gate = GateVerdict(oneOf(22, string(GateNone), string(GateOK), string(GateFail), string(GateUntestable), string(GateMissing)))
	if err != nil {
		return Row{}, err
	}
	if row.Warnings, err = splitWarnings(field(23)); err != nil {
		return Row{}, fail(23, err)
	}
	return row, nil
}
