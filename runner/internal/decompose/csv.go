package decompose

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// CSVFile is the name of the file the report writes the fits to.
const CSVFile = "fits.csv"

// Set is the sweeps of one result folder, under the name that the folder column gives it.
type Set struct {
	Folder string
	Sweeps []Sweep
}

// CSVHeader is the header of fits.csv: one row per result folder and sweep, in the result
// folder conventions (schema_version first, units in the names, an empty cell for a missing
// value). a is in ms; b and c in ms per token; rows is always per_request.
var CSVHeader = []string{
	"schema_version", "folder", "sweep", "n_configs", "rows",
	"prefill_n", "prefill_configs", "prefill_lengths", "prompt_tokens_source",
	"a_ms", "a_se_ms", "a_ci_low_ms", "a_ci_high_ms",
	"b_ms_per_token", "b_se_ms_per_token", "b_ci_low_ms_per_token", "b_ci_high_ms_per_token", "prefill_r2",
	"decode_n", "decode_configs", "decode_lengths",
	"c_ms_per_token", "c_se_ms_per_token", "c_ci_low_ms_per_token", "c_ci_high_ms_per_token", "decode_r2",
	"ci_level", "prefill_notes", "decode_notes",
}

// csvNum writes a number with six decimals; a missing value is an empty cell.
func csvNum(v float64) string { return tabular.Float(v, 6) }

// notes joins a fit's reason for being skipped and its warnings with "; ", on one line.
func notes(f *Fit) string {
	var parts []string
	if f.Skipped != "" {
		parts = append(parts, "not fitted: "+f.Skipped)
	}
	parts = append(parts, f.Warnings...)
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(strings.Join(parts, "; "))
}

func estimateCells(e Estimate, ok bool) []string {
	if !ok {
		return []string{"", "", "", ""}
	}
	return []string{csvNum(e.Value), csvNum(e.StdErr), csvNum(e.Low), csvNum(e.High)}
}

// row returns the fits.csv row of one sweep.
func row(folder string, s *Sweep) []string {
	p, d := &s.Prefill, &s.Decode
	r2 := func(f *Fit) string {
		if !f.OK() {
			return ""
		}
		return csvNum(f.Line.R2)
	}
	out := []string{strconv.Itoa(results.FormatVersion), folder, s.Name, strconv.Itoa(len(s.ConfigIDs)), "per_request",
		strconv.Itoa(len(p.X)), strconv.Itoa(p.Configs), strconv.Itoa(p.Lengths), p.PromptSource}
	out = append(out, estimateCells(p.Line.Intercept, p.OK())...)
	out = append(out, estimateCells(p.Line.Slope, p.OK())...)
	out = append(out, r2(p), strconv.Itoa(len(d.X)), strconv.Itoa(d.Configs), strconv.Itoa(d.Lengths))
	out = append(out, estimateCells(d.Line.Slope, d.OK())...)
	out = append(out, r2(d), csvNum(Level), notes(p), notes(d))
	return out
}

// WriteCSV writes fits.csv: the header, then one row per sweep of each set, in order.
func WriteCSV(w io.Writer, sets ...Set) error {
	var rows [][]string
	for _, set := range sets {
		for i := range set.Sweeps {
			rows = append(rows, row(set.Folder, &set.Sweeps[i]))
		}
	}
	if err := tabular.WriteCSV(w, CSVHeader, rows); err != nil {
		return fmt.Errorf("write %s: %w", CSVFile, err)
	}
	return nil
}
