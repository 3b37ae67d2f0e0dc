package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
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

Formats: text, an aligned table; markdown, a table for a pull request or a wiki; csv, the rows
of summary.csv; json, one object with the folder's facts and "rows". Durations are in
milliseconds, counts in units; a missing value is "-" in text and markdown, empty in csv and null
in json.`

// summaryFormats are the values of summary's --format flag.
var summaryFormats = []string{"text", "markdown", "csv", "json"}

// cmdSummary prints the summary of one result folder.
func cmdSummary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("summary", "runner summary RESULT_DIR [--format text|markdown|csv|json]", summaryDescription, stderr)
	format := fs.String("format", "text", "output format: text, markdown, csv or json")
	dirs, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(dirs) != 1 {
		return usageError("summary: want exactly one result folder, got %d (usage: runner summary RESULT_DIR [--format text|markdown|csv|json])", len(dirs))
	}
	var write func(io.Writer, *summaryReport) error
	switch *format {
	case "text":
		write = writeSummaryText
	case "markdown", "md":
		write = writeSummaryMarkdown
	case "csv":
		write = func(w io.Writer, s *summaryReport) error { return results.WriteSummary(w, s.rows) }
	case "json":
		write = writeSummaryJSON
	default:
		return usageError("summary: unknown format %q (want %s)", *format, strings.Join(summaryFormats, ", "))
	}
	rep, err := loadSummary(dirs[0])
	if err != nil {
		return &exitError{code: 2, msg: "runner: summary: " + err.Error()}
	}
	for _, n := range rep.notes {
		fmt.Fprintf(stderr, "runner: summary: %s: %s\n", dirs[0], n)
	}
	return write(stdout, rep)
}

// summaryReport is what `runner summary` shows of a folder.
type summaryReport struct {
	man      *results.Manifest
	status   results.Status
	requests int // measured requests
	failed   int // measured requests that failed
	rows     []results.SummaryRow
	notes    []string
	fits     []decompose.Sweep // prefill/decode fits per sweep
	// dead says, for each config none of whose measured requests succeeded, how they failed;
	// text and markdown show such a config as one line instead of a row of empty metrics.
	dead map[string]string
}

func loadSummary(dir string) (*summaryReport, error) {
	l, err := results.Load(dir)
	if err != nil {
		return nil, err
	}
	rep := &summaryReport{man: l.Manifest, status: l.Status, notes: l.Notes,
		rows: results.Summarize(l.Manifest.Configs, l.Requests), fits: decompose.Sweeps(l.Manifest.Configs, l.Requests)}
	type tally struct {
		measured, failed int
		causes           map[string]int
	}
	byConfig := map[string]*tally{}
	for _, q := range l.Requests {
		if q.Phase != record.PhaseMeasure {
			continue
		}
		rep.requests++
		t := byConfig[q.ConfigID]
		if t == nil {
			t = &tally{causes: map[string]int{}}
			byConfig[q.ConfigID] = t
		}
		t.measured++
		if q.Status != record.StatusOK {
			rep.failed++
			t.failed++
			t.causes[failureCause(q)]++
		}
	}
	rep.dead = map[string]string{}
	for id, t := range byConfig {
		if t.failed < t.measured {
			continue
		}
		cause, most := "", 0
		for c, n := range t.causes {
			if n > most || (n == most && c < cause) {
				cause, most = c, n
			}
		}
		line := fmt.Sprintf("no successful request: %d of %d measured requests failed", t.failed, t.measured)
		if most == t.failed {
			line += ": " + cause
		} else {
			line += fmt.Sprintf(", %d of them: %s", most, cause)
		}
		rep.dead[id] = line
	}
	return rep, nil
}

// failureCause is a failed request's error class and the first line of its error, shortened.
func failureCause(q record.Request) string {
	msg, _, _ := strings.Cut(q.Error, "\n")
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:159]) + "…"
	}
	if q.ErrorClass == "" {
		return msg
	}
	return string(q.ErrorClass) + ": " + msg
}

// split returns the rows of the configs with at least one successful measured request, and the
// labels and causes of the others, in row order.
func (s *summaryReport) split() (live []results.SummaryRow, dead [][2]string) {
	seen := map[string]bool{}
	for _, r := range s.rows {
		cause, ok := s.dead[r.ConfigID]
		if !ok {
			live = append(live, r)
			continue
		}
		if !seen[r.ConfigID] {
			seen[r.ConfigID] = true
			dead = append(dead, [2]string{r.Label, cause})
		}
	}
	return live, dead
}

// headline is the one-line description of the folder above the table.
func (s *summaryReport) headline() string {
	return fmt.Sprintf("experiment %s, status %s, %d measured requests (%d failed), started %s",
		s.man.Experiment.Name, s.status, s.requests, s.failed, s.man.Start.UTC().Format("2006-01-02T15:04:05Z"))
}

// summaryNum formats a value for the text and markdown tables.
func summaryNum(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.3f", f)
}

func summaryCI(r results.SummaryRow) string {
	if math.IsNaN(r.MedianCILow) {
		return "-"
	}
	return fmt.Sprintf("[%s, %s]", summaryNum(r.MedianCILow), summaryNum(r.MedianCIHigh))
}

var summaryHeader = []string{"config", "metric", "n", "failed", "median", "p95", "p99", "min", "max", "mean", "stddev", "median 95% CI"}

func summaryCells(r results.SummaryRow) []string {
	return []string{r.Label, r.Metric, fmt.Sprint(r.N), fmt.Sprint(r.NFailed), summaryNum(r.Median), summaryNum(r.P95),
		summaryNum(r.P99), summaryNum(r.Min), summaryNum(r.Max), summaryNum(r.Mean), summaryNum(r.Stddev), summaryCI(r)}
}

// summaryWarning is one distinct warning of a config and the metrics it applies to.
type summaryWarning struct {
	label   string
	text    string
	metrics []string
}

// groupWarnings merges the warnings of each config's rows: one line per distinct text, with the
// metrics it concerns ("all metrics" when it concerns each of them).
func groupWarnings(rows []results.SummaryRow) []summaryWarning {
	var out []summaryWarning
	nMetrics := len(results.Metrics())
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].ConfigID == rows[i].ConfigID {
			j++
		}
		var group []summaryWarning
		for _, r := range rows[i:j] {
			for _, w := range r.Warnings {
				k := 0
				for k < len(group) && group[k].text != w {
					k++
				}
				if k == len(group) {
					group = append(group, summaryWarning{label: r.Label, text: w})
				}
				group[k].metrics = append(group[k].metrics, r.Metric)
			}
		}
		for k := range group {
			if len(group[k].metrics) == nMetrics && j-i == nMetrics {
				group[k].metrics = []string{"all metrics"}
			}
		}
		out = append(out, group...)
		i = j
	}
	return out
}

func writeSummaryText(w io.Writer, s *summaryReport) error {
	fmt.Fprintln(w, s.headline())
	live, dead := s.split()
	if len(live) > 0 {
		fmt.Fprintln(w)
		if err := writeSummaryTable(w, live); err != nil {
			return err
		}
	}
	if len(dead) > 0 {
		fmt.Fprintln(w)
		width := 0
		for _, d := range dead {
			width = max(width, len([]rune(d[0])))
		}
		for _, d := range dead {
			fmt.Fprintf(w, "  %s%s  %s\n", d[0], strings.Repeat(" ", width-len([]rune(d[0]))), d[1])
		}
	}
	if ws := groupWarnings(live); len(ws) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, x := range ws {
			fmt.Fprintf(w, "  %s: %s (%s)\n", x.label, x.text, strings.Join(x.metrics, ", "))
		}
	}
	writeFitsText(w, s.fits)
	return nil
}

// writeSummaryTable writes rows as an aligned table.
func writeSummaryTable(w io.Writer, rows []results.SummaryRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Left-align the two text columns by padding them here; tabwriter aligns the numbers right.
	wl, wm := len(summaryHeader[0]), len(summaryHeader[1])
	for _, r := range rows {
		wl, wm = max(wl, len([]rune(r.Label))), max(wm, len(r.Metric))
	}
	line := func(cells []string) {
		cells[0] = cells[0] + strings.Repeat(" ", wl-len([]rune(cells[0])))
		cells[1] = cells[1] + strings.Repeat(" ", wm-len(cells[1]))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(append([]string(nil), summaryHeader...))
	prev := ""
	for _, r := range rows {
		cells := summaryCells(r)
		if r.ConfigID == prev {
			cells[0] = ""
		}
		prev = r.ConfigID
		line(cells)
	}
	return tw.Flush()
}

func writeSummaryMarkdown(w io.Writer, s *summaryReport) error {
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	fmt.Fprintf(w, "**%s**\n", esc.Replace(s.headline()))
	live, dead := s.split()
	if len(live) > 0 {
		fmt.Fprintf(w, "\n| %s |\n", strings.Join(summaryHeader, " | "))
		fmt.Fprint(w, "| --- | --- |")
		for range summaryHeader[2:] {
			fmt.Fprint(w, " ---: |")
		}
		fmt.Fprintln(w)
	}
	for _, r := range live {
		cells := summaryCells(r)
		for i := range cells {
			cells[i] = esc.Replace(cells[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if len(dead) > 0 {
		fmt.Fprintln(w)
		for _, d := range dead {
			fmt.Fprintf(w, "- **%s**: %s\n", esc.Replace(d[0]), esc.Replace(d[1]))
		}
	}
	if ws := groupWarnings(live); len(ws) > 0 {
		fmt.Fprint(w, "\nWarnings:\n\n")
		for _, x := range ws {
			fmt.Fprintf(w, "- %s: %s (%s)\n", esc.Replace(x.label), esc.Replace(x.text), strings.Join(x.metrics, ", "))
		}
	}
	writeFitsMarkdown(w, s.fits)
	return nil
}

// summaryJSONRow is one row of the json format; a missing value is null.
type summaryJSONRow struct {
	ConfigIndex   int      `json:"config_index"`
	ConfigID      string   `json:"config_id"`
	ServerID      string   `json:"server_id"`
	Label         string   `json:"label"`
	Metric        string   `json:"metric"`
	N             int      `json:"n"`
	NFailed       int      `json:"n_failed"`
	NMissing      int      `json:"n_missing"`
	Min           *float64 `json:"min"`
	Median        *float64 `json:"median"`
	P95           *float64 `json:"p95"`
	P99           *float64 `json:"p99"`
	Max           *float64 `json:"max"`
	Mean          *float64 `json:"mean"`
	Stddev        *float64 `json:"stddev"`
	MedianCILow   *float64 `json:"median_ci_low"`
	MedianCIHigh  *float64 `json:"median_ci_high"`
	MedianCILevel *float64 `json:"median_ci_level"`
	Warnings      []string `json:"warnings"`
}

func writeSummaryJSON(w io.Writer, s *summaryReport) error {
	num := func(f float64) *float64 {
		if math.IsNaN(f) {
			return nil
		}
		return &f
	}
	out := struct {
		SchemaVersion int              `json:"schema_version"`
		Experiment    string           `json:"experiment"`
		Status        results.Status   `json:"status"`
		StartTime     string           `json:"start_time"`
		Requests      int              `json:"requests"`
		Failed        int              `json:"failed"`
		Rows          []summaryJSONRow `json:"rows"`
		Fits          []fitJSON        `json:"fits"`
	}{SchemaVersion: results.FormatVersion, Experiment: s.man.Experiment.Name, Status: s.status,
		StartTime: s.man.Start.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), Requests: s.requests, Failed: s.failed,
		Rows: []summaryJSONRow{}, Fits: fitsJSON(s.fits)}
	for _, r := range s.rows {
		warnings := r.Warnings
		if warnings == nil {
			warnings = []string{}
		}
		out.Rows = append(out.Rows, summaryJSONRow{ConfigIndex: r.ConfigIndex, ConfigID: r.ConfigID, ServerID: r.ServerID,
			Label: r.Label, Metric: r.Metric, N: r.N, NFailed: r.NFailed, NMissing: r.NMissing, Min: num(r.Min),
			Median: num(r.Median), P95: num(r.P95), P99: num(r.P99), Max: num(r.Max), Mean: num(r.Mean),
			Stddev: num(r.Stddev), MedianCILow: num(r.MedianCILow), MedianCIHigh: num(r.MedianCIHigh),
			MedianCILevel: num(r.MedianCILevel), Warnings: warnings})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
