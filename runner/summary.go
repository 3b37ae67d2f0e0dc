package main

import (
	"context"
	"io"

	"github.com/onelayerdown/runner/runner/internal/summary"
)

const summaryDescription = `
Summarise a result folder: for each config and metric, over the measured requests (warm-up
requests, the first request after each server boot and failed requests left out), the number of
values, the failures, the median, p95, p99, min, max, mean, standard deviation and a
distribution-free 95% confidence interval for the median. Percentiles interpolate linearly
between closest ranks (NumPy's default). Warnings say what the numbers cannot carry, such as too
few samples for an interval.

The summary is computed from requests.csv, so it also works on an interrupted folder.

Text and markdown end with the prefill/decode fit of each sweep (configs that differ only in
prompt or output length), least squares over the measured requests: ttft_ms ≈ a +
b·prompt_tokens and e2e_ms ≈ ttft_ms + c·(output_tokens − 1), with 95% intervals from
Student's t and R²; json carries them as "fits". runner report draws them.

Formats: text, an aligned table that fits 100 columns (--wide: every column); markdown, a table for a pull request or a wiki; csv, the rows
of summary.csv; json, one object with the folder's facts and "rows". Durations are in
milliseconds, counts in units; a missing value is "-" in text and markdown, empty in csv and null
in json.`

// cmdSummary prints the summary of one result folder.
func cmdSummary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("summary", "runner summary RESULT_DIR [--format text|markdown|csv|json] [--wide]", summaryDescription, stderr)
	format := fs.String("format", "text", "output format: "+orList(summary.Formats()))
	wide := fs.Bool("wide", false, "text: show every column (p99, mean, stddev) instead of a table that fits 100 columns")
	dirs, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(dirs) != 1 {
		return usageError("want exactly one result folder, got %d (usage: runner summary RESULT_DIR [--format text|markdown|csv|json])", len(dirs))
	}
	enc, err := summary.NewEncoder(*format, stdout)
	if err != nil {
		return usageError("%w", err)
	}
	rep, err := summary.Read(dirs[0])
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if t, ok := enc.(*summary.TextEncoder); ok {
		t.Wide(*wide)
	}
	for _, n := range rep.Notes {
		warnf(stderr, "summary: %s: %s", dirs[0], n)
	}
	return enc.Encode(rep)
}
