package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/report"
)

const reportDescription = `
Write a self-contained report of a result folder, or of two compared (OLD the baseline, NEW the
newer run, overlaid in every chart): index.html, which opens offline with every chart inline,
each chart also as NAME.png and NAME.svg, and fits.csv.

The charts: TTFT against prompt tokens and TPOT per token against output tokens (the median of
each config with a 5–95% band, one line per value of the other axes, and the fitted line); the
prefill/decode fits over the individual requests; the distribution of TTFT per config (box
plots) and of the gaps between text events (cumulative distributions); the timeline of one
request's events, with how many tokens each carried; TPOT per event beside TPOT per token; and,
where the server timed the requests in its /metrics, a bar per request of its queue, prefill and
decode times beside the client's TTFT and e2e.
For a folder with load points: TTFT and TPOT (p50 and p99) against the concurrency or the request
rate, output tokens per second against TTFT (the knee), and a table of the load points with their
achieved rate, goodput and the client's send lag.
A chart the data cannot support (no prompt lengths to sweep, say) is left out, and the page
says why.

The fits, by least squares over the measured requests of each sweep (configs that differ only
in prompt or output length): ttft_ms ≈ a + b·prompt_tokens, with the prompt tokens the server
reported, else those requested, and e2e_ms ≈ ttft_ms + c·(output_tokens − 1). a, b and c come
with 95% confidence intervals (Student's t) and R², in the page, in fits.csv and in runner
summary. Warm-up requests, the first request after a boot and failed requests are left out.

The report goes to RESULT_DIR/report/ (NEW_DIR/report/ with two folders) unless -o says
where; files of an earlier report there are replaced.`

const reportUsage = "runner report RESULT_DIR [NEW_DIR] [-o OUT_DIR]"

// cmdReport writes the HTML report of one result folder, or of two overlaid.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, reportDescription, stderr)
	out := fs.String("o", "", "output folder (default: the newest result folder's report/)")
	dirs, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(dirs) < 1 || len(dirs) > 2 {
		return usageError("want one or two result folders, got %d (usage: %s)", len(dirs), reportUsage)
	}
	var folders []*report.Folder
	for _, d := range dirs {
		f, err := report.Read(d)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		for _, n := range f.Notes {
			warnf(stderr, "report: %s: %s", d, n)
		}
		folders = append(folders, f)
	}
	dest := *out
	if dest == "" {
		dest = filepath.Join(dirs[len(dirs)-1], "report")
	}
	res, err := report.Write(dest, folders...)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	for _, s := range res.Skipped {
		warnf(stderr, "report: no %s chart: %s", s.Chart, s.Reason)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s (%d charts as PNG and SVG, %s)\n", filepath.Join(dest, report.IndexFile), len(res.Charts),
		decompose.CSVFile)
	return err
}
