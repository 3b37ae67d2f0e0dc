package summary

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Encoder writes a Report in one format.
type Encoder interface {
	Encode(*Report) error
}

// The encoders implement Encoder.
var (
	_ Encoder = (*TextEncoder)(nil)
	_ Encoder = (*MarkdownEncoder)(nil)
	_ Encoder = (*CSVEncoder)(nil)
	_ Encoder = (*JSONEncoder)(nil)
)

// formats are the output formats of a Report, in the order help lists them.
var formats = tabular.NewFormats(
	tabular.Format[Encoder]{Name: "text", New: func(w io.Writer) Encoder { return NewTextEncoder(w) }},
	tabular.Format[Encoder]{Name: "markdown", Aliases: []string{"md"}, New: func(w io.Writer) Encoder { return NewMarkdownEncoder(w) }},
	tabular.Format[Encoder]{Name: "csv", New: func(w io.Writer) Encoder { return NewCSVEncoder(w) }},
	tabular.Format[Encoder]{Name: "json", New: func(w io.Writer) Encoder { return NewJSONEncoder(w) }},
)

// Formats returns the names of the output formats, in the order help lists them.
func Formats() []string { return formats.Names() }

// NewEncoder returns the encoder of a format named by Formats (md is markdown) over w.
func NewEncoder(format string, w io.Writer) (Encoder, error) { return formats.New(format, w) }

// num formats a value for the text and markdown tables; "-" when missing.
func num(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.3f", f)
}

func ci(r results.SummaryRow) string {
	if math.IsNaN(r.MedianCILow) {
		return "-"
	}
	return fmt.Sprintf("[%s, %s]", num(r.MedianCILow), num(r.MedianCIHigh))
}

var header = []string{"config", "metric", "n", "failed", "median", "p95", "p99", "min", "max", "mean", "stddev", "median 95% CI"}

// narrowColumns are the columns of header that the text table shows by default, so that it fits
// 100 columns: p99, the mean and the standard deviation are in the wide table (--wide), the
// markdown, csv and json formats.
var narrowColumns = []int{1, 2, 3, 4, 5, 7, 8, 11}

func cells(r results.SummaryRow) []string {
	return []string{r.Label, r.Metric, fmt.Sprint(r.N), fmt.Sprint(r.NFailed), num(r.Median), num(r.P95),
		num(r.P99), num(r.Min), num(r.Max), num(r.Mean), num(r.Stddev), ci(r)}
}

var loadHeader = []string{"config", "mode", "concurrency", "target rps", "achieved rps", "output tok/s", "goodput rps", "slo met", "send lag p99 ms"}

// loadServerHeader names the columns the load table gains when a load point has the server's
// figures: its mean TTFT and the client overhead over the load point's requests.
var loadServerHeader = []string{"server ttft ms", "overhead ms"}

// hasLoadServer reports whether a load point has the server's mean TTFT.
func hasLoadServer(rows []results.LoadRow) bool {
	for _, r := range rows {
		if r.Server.TTFTMean != nil {
			return true
		}
	}
	return false
}

// loadHeaderOf returns the load table's header for rows.
func loadHeaderOf(rows []results.LoadRow) []string {
	h := append([]string(nil), loadHeader...)
	if hasLoadServer(rows) {
		h = append(h, loadServerHeader...)
	}
	return h
}

// loadCellsOf renders one load point with the server's columns when server is set.
func loadCellsOf(l results.LoadRow, server bool) []string {
	c := loadCells(l)
	if server {
		ms := func(d *time.Duration) string {
			if d == nil {
				return "-"
			}
			return num(float64(*d) / 1e6)
		}
		c = append(c, ms(l.Server.TTFTMean), ms(l.Server.ClientOverheadMean))
	}
	return c
}

// loadCells renders one load point for the text and markdown tables; "-" where there is no value.
func loadCells(l results.LoadRow) []string {
	mode, conc := string(l.LoadMode), "-"
	if mode == "" {
		mode = "-"
	}
	if l.Concurrency > 0 {
		conc = fmt.Sprint(l.Concurrency)
	}
	met := "-"
	if !math.IsNaN(l.SLOAttained) {
		met = fmt.Sprintf("%.1f%%", 100*l.SLOAttained)
	}
	lag := "-"
	if l.SendLagP99 != nil {
		lag = num(float64(*l.SendLagP99) / 1e6)
	}
	return []string{l.Label, mode, conc, num(l.TargetRate), num(l.AchievedRate), num(l.OutputTokensPerS), num(l.Goodput), met, lag}
}

// writeLoadTable writes the load points as an aligned table; the caller checks w for errors.
func writeLoadTable(w io.Writer, rows []results.LoadRow) {
	server := hasLoadServer(rows)
	cells := [][]string{loadHeaderOf(rows)}
	for _, r := range rows {
		cells = append(cells, loadCellsOf(r, server))
	}
	writeAligned(w, cells)
}

// narrowLoadHeader names the columns of the load table that fits 100 columns: the load as one
// cell, and shorter names.
var narrowLoadHeader = []string{"config", "load", "rps", "tok/s", "goodput", "slo met", "lag p99 ms"}

// writeNarrowLoadTable writes the load points as an aligned table of narrowLoadHeader's
// columns, with the server's figures when a load point has them; the caller checks w for errors.
func writeNarrowLoadTable(w io.Writer, rows []results.LoadRow) {
	server := hasLoadServer(rows)
	h := append([]string(nil), narrowLoadHeader...)
	if server {
		h = append(h, "server ttft", "overhead")
	}
	lines := [][]string{h}
	for _, r := range rows {
		c := loadCellsOf(r, server)
		// c: config, mode, concurrency, target rps, achieved, tok/s, goodput, met, lag, [server...]
		load := "-"
		switch {
		case r.LoadMode == "closed":
			load = "closed " + c[2]
		case r.LoadMode != "" && r.Concurrency > 0:
			load = "open " + c[3] + "/s ≤" + c[2]
		case r.LoadMode != "":
			load = "open " + c[3] + "/s"
		}
		lines = append(lines, append([]string{c[0], load}, c[4:]...))
	}
	writeAligned(w, lines)
}

// writeAligned writes lines of cells as a table: the first two columns, which hold text,
// aligned left, the numbers after them aligned right. The caller checks w for errors.
func writeAligned(w io.Writer, lines [][]string) { writeAlignedFrom(w, lines, 2) }

// writeAlignedFrom writes lines of cells as a table: the first text columns aligned left, the
// numbers after them aligned right. The caller checks w for errors.
func writeAlignedFrom(w io.Writer, lines [][]string, text int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// tabwriter aligns every column right: pad the text columns here.
	widths := make([]int, text)
	for _, c := range lines {
		for i := range widths {
			widths[i] = max(widths[i], len([]rune(c[i])))
		}
	}
	for _, c := range lines {
		for i, wd := range widths {
			c[i] += strings.Repeat(" ", wd-len([]rune(c[i])))
		}
		fmt.Fprintln(tw, strings.Join(c, "\t")+"\t")
	}
	tw.Flush()
}

// groupWarnings merges the warnings of each config's rows: one line per distinct text, with the
// metrics it concerns.
func groupWarnings(rows []results.SummaryRow) []tabular.Warning {
	noted := make([]tabular.Noted, len(rows))
	for i, r := range rows {
		noted[i] = tabular.Noted{Group: r.ConfigID, Label: r.Label, Metric: r.Metric, Warnings: r.Warnings}
	}
	return tabular.GroupWarnings(noted)
}

// TextEncoder writes a Report as aligned text: the headline, the table of the configs with a
// successful request, one line for each config without, the warnings and the fits. By default
// the table fits 100 columns: each config's label heads its own rows, and p99, the mean and the
// standard deviation are left out; Wide writes every column, a config's label beside its first
// row.
type TextEncoder struct {
	w    io.Writer
	wide bool
}

// NewTextEncoder returns a TextEncoder writing to w.
func NewTextEncoder(w io.Writer) *TextEncoder { return &TextEncoder{w: w} }

// Wide makes the table show every column, and returns e.
func (e *TextEncoder) Wide(wide bool) *TextEncoder {
	e.wide = wide
	return e
}

// Encode writes s. Text from a server or the folder (labels, error texts, warnings) is written
// with its control characters escaped (tabular.Visible): an escape sequence in an error body
// would otherwise clear or recolour the terminal.
func (e *TextEncoder) Encode(s *Report) error {
	w := tabular.NewErrWriter(tabular.VisibleWriter(e.w))
	fmt.Fprintln(w, tabular.Wrap(s.headline(), tabular.Width, "", "  "))
	live, dead := s.split()
	if len(live) > 0 {
		fmt.Fprintln(w)
		if e.wide {
			writeTable(w, live)
		} else {
			writeNarrowTable(w, live)
		}
	}
	if len(dead) > 0 {
		fmt.Fprintln(w)
		width := 0
		for _, d := range dead {
			width = max(width, len([]rune(tabular.Visible(d[0]))))
		}
		for _, d := range dead {
			// Escaped before it is laid out, so that the escapes count in the width.
			d = [2]string{tabular.Visible(d[0]), tabular.Visible(d[1])}
			if e.wide {
				fmt.Fprintf(w, "  %s%s  %s\n", d[0], strings.Repeat(" ", width-len([]rune(d[0]))), d[1])
			} else {
				fmt.Fprintln(w, tabular.Wrap(d[0]+": "+d[1], tabular.Width, "  ", "    "))
			}
		}
	}
	if len(s.Load) > 0 {
		fmt.Fprintln(w, "\nload (rates over each config's measured window):")
		if e.wide {
			writeLoadTable(w, s.Load)
		} else {
			writeNarrowLoadTable(w, s.Load)
		}
	}
	if ws := runWarnings(live, len(dead)); len(ws) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, x := range ws {
			line := tabular.Visible(fmt.Sprintf("%s: %s (%s)", x.Label, x.Text, strings.Join(x.Metrics, ", ")))
			fmt.Fprintln(w, tabular.Wrap(line, tabular.Width, "  ", "    "))
			if x.Advice != "" {
				fmt.Fprintln(w, tabular.Wrap(x.Advice, tabular.Width, "    ", "    "))
			}
		}
	}
	decompose.NewTextEncoder(w).Encode(s.Fits)
	return w.Err()
}

// runWarning is one line of a summary's warnings: a config's, or one every config has.
type runWarning struct {
	tabular.Warning
	Advice string // what would answer it (stats.Advice); "" when more requests would not
	all    bool   // every config has it
}

// runWarnings merges the warnings of each config's rows, as groupWarnings does, and then says
// once a warning that every config of rows has with the same text and metrics, such as a sample
// too small for p95 when every config has the same repetitions: for "all configs", or for "all
// configs with a result" when others (dead of them) had no successful request.
func runWarnings(rows []results.SummaryRow, dead int) []runWarning {
	if len(rows) == 0 {
		return nil
	}
	ws := groupWarnings(rows)
	type key struct{ text, metrics string }
	keyOf := func(x tabular.Warning) key { return key{x.Text, strings.Join(x.Metrics, ", ")} }
	// Count the configs each warning stands in by config id: two configs may share a label.
	configs := map[string]bool{}
	for _, r := range rows {
		configs[r.ConfigID] = true
	}
	has := map[key]map[string]bool{}
	for _, x := range ws {
		k := keyOf(x)
		if has[k] == nil {
			has[k] = map[string]bool{}
		}
		has[k][x.Group] = true
	}
	all := "all configs"
	if dead > 0 {
		all = "all configs with a result"
	}
	var out []runWarning
	said := map[key]bool{}
	for _, x := range ws {
		k := keyOf(x)
		if len(configs) > 1 && len(has[k]) == len(configs) {
			if said[k] {
				continue
			}
			said[k] = true
			x.Label = all
		}
		out = append(out, runWarning{Warning: x, Advice: stats.Advice(x.Text), all: x.Label == all && len(configs) > 1})
	}
	// The warnings of all configs come first: they are about the run, not one config.
	slices.SortStableFunc(out, func(a, b runWarning) int { return cmp.Compare(boolRank(!a.all), boolRank(!b.all)) })
	return out
}

// boolRank orders false before true.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeNarrowTable writes rows as an aligned table of narrowColumns, each config's label on a
// line of its own above its rows, so that a long label does not widen the table; the caller
// checks w for errors.
func writeNarrowTable(w io.Writer, rows []results.SummaryRow) {
	pick := func(c []string) []string {
		out := make([]string, 0, len(narrowColumns))
		for _, i := range narrowColumns {
			out = append(out, c[i])
		}
		return out
	}
	h := pick(header)
	h[0] = "config / metric"
	table := [][]string{h}
	above := map[int]string{} // the label written above a line of the table
	prev := ""
	for _, r := range rows {
		if r.ConfigID != prev {
			above[len(table)] = r.Label
		}
		prev = r.ConfigID
		c := pick(cells(r))
		c[0] = "  " + c[0]
		table = append(table, c)
	}
	var buf strings.Builder
	writeAlignedFrom(&buf, table, 1)
	tabular.WriteLabelled(w, buf.String(), above)
}

// writeTable writes rows as an aligned table, a config's label on its first row only; the
// caller checks w for errors.
func writeTable(w io.Writer, rows []results.SummaryRow) {
	lines := [][]string{append([]string(nil), header...)}
	prev := ""
	for _, r := range rows {
		c := cells(r)
		if r.ConfigID == prev {
			c[0] = ""
		}
		prev = r.ConfigID
		lines = append(lines, c)
	}
	writeAligned(w, lines)
}

// MarkdownEncoder writes a Report as markdown, for a pull request or a wiki: the same parts as
// the text format.
type MarkdownEncoder struct{ w io.Writer }

// NewMarkdownEncoder returns a MarkdownEncoder writing to w.
func NewMarkdownEncoder(w io.Writer) *MarkdownEncoder { return &MarkdownEncoder{w: w} }

// Encode writes s. Text from a server or the folder is escaped as runner diff escapes it
// (tabular.Markdown): a label or an error text can hold neither raw HTML, nor a pipe that ends
// its cell, nor a control character that reaches the terminal.
func (e *MarkdownEncoder) Encode(s *Report) error {
	w := tabular.NewErrWriter(tabular.VisibleWriter(e.w))
	fmt.Fprintf(w, "**%s**\n", tabular.Markdown(s.headline()))
	live, dead := s.split()
	if len(live) > 0 {
		fmt.Fprintf(w, "\n| %s |\n", strings.Join(header, " | "))
		fmt.Fprint(w, "| --- | --- |")
		for range header[2:] {
			fmt.Fprint(w, " ---: |")
		}
		fmt.Fprintln(w)
	}
	for _, r := range live {
		c := cells(r)
		for i := range c {
			c[i] = tabular.Markdown(c[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
	}
	if len(dead) > 0 {
		fmt.Fprintln(w)
		for _, d := range dead {
			fmt.Fprintf(w, "- **%s**: %s\n", tabular.Markdown(d[0]), tabular.Markdown(d[1]))
		}
	}
	if len(s.Load) > 0 {
		h, server := loadHeaderOf(s.Load), hasLoadServer(s.Load)
		fmt.Fprintf(w, "\nLoad (rates over each config's measured window):\n\n| %s |\n", strings.Join(h, " | "))
		fmt.Fprint(w, "| --- | --- |")
		for range h[2:] {
			fmt.Fprint(w, " ---: |")
		}
		fmt.Fprintln(w)
		for _, l := range s.Load {
			c := loadCellsOf(l, server)
			for i := range c {
				c[i] = tabular.Markdown(c[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
		}
	}
	if ws := runWarnings(live, len(dead)); len(ws) > 0 {
		fmt.Fprint(w, "\nWarnings:\n\n")
		for _, x := range ws {
			fmt.Fprintf(w, "- %s: %s (%s)", tabular.Markdown(x.Label), tabular.Markdown(x.Text), strings.Join(x.Metrics, ", "))
			if x.Advice != "" {
				fmt.Fprintf(w, ": %s", tabular.Markdown(x.Advice))
			}
			fmt.Fprintln(w)
		}
	}
	decompose.NewMarkdownEncoder(w).Encode(s.Fits)
	return w.Err()
}

// CSVEncoder writes the rows of a Report as summary.csv writes them. The load points are not
// part of it: they are load.csv, one file per table.
type CSVEncoder struct{ w io.Writer }

// NewCSVEncoder returns a CSVEncoder writing to w.
func NewCSVEncoder(w io.Writer) *CSVEncoder { return &CSVEncoder{w: w} }

// Encode writes s's rows.
func (e *CSVEncoder) Encode(s *Report) error { return results.SummaryCSV.Write(e.w, s.Rows) }

// JSONEncoder writes a Report as one indented JSON object: the folder's facts, "rows" (a
// missing value null) and "fits".
type JSONEncoder struct{ w io.Writer }

// NewJSONEncoder returns a JSONEncoder writing to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder { return &JSONEncoder{w: w} }

// jsonRow is one row of the json format; a missing value is null.
type jsonRow struct {
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

// jsonLoad is one load point of the json format, named as load.csv's columns; a missing value
// is null.
type jsonLoad struct {
	ConfigIndex      int      `json:"config_index"`
	ConfigID         string   `json:"config_id"`
	ServerID         string   `json:"server_id"`
	Label            string   `json:"label"`
	LoadMode         string   `json:"load_mode"`
	Concurrency      *int     `json:"concurrency"`
	TargetRate       *float64 `json:"target_rate_rps"`
	Measured         int      `json:"measured"`
	Completed        int      `json:"completed"`
	Failed           int      `json:"failed"`
	Window           *float64 `json:"window_s"`
	AchievedRate     *float64 `json:"achieved_rate_rps"`
	OutputTokensPerS *float64 `json:"output_tokens_per_s"`
	SendLagP50       *float64 `json:"send_lag_p50_ms"`
	SendLagP99       *float64 `json:"send_lag_p99_ms"`
	InFlightMax      *int     `json:"in_flight_max"`
	Good             *int     `json:"good"`
	Goodput          *float64 `json:"goodput_rps"`
	SLOAttained      *float64 `json:"slo_attained"`
	// The server's figures of the load point (load_server.csv); left out where it has none.
	ServerRequests         *int     `json:"server_requests,omitempty"`
	ServerTTFTMean         *float64 `json:"server_ttft_mean_ms,omitempty"`
	ServerE2EMean          *float64 `json:"server_e2e_mean_ms,omitempty"`
	ServerQueueMean        *float64 `json:"server_queue_mean_ms,omitempty"`
	ServerPrefillMean      *float64 `json:"server_prefill_mean_ms,omitempty"`
	ServerDecodeMean       *float64 `json:"server_decode_mean_ms,omitempty"`
	ServerPromptTokens     *int     `json:"server_prompt_tokens,omitempty"`
	ServerGenerationTokens *int     `json:"server_generation_tokens,omitempty"`
	PrefixCacheQueries     *int     `json:"prefix_cache_queries,omitempty"`
	PrefixCacheHits        *int     `json:"prefix_cache_hits,omitempty"`
	ClientOverheadMean     *float64 `json:"client_overhead_mean_ms,omitempty"`
}

func toJSONLoad(l results.LoadRow) jsonLoad {
	null := tabular.Null
	nz := func(n int) *int {
		if n == 0 {
			return nil
		}
		return &n
	}
	ms := func(d *time.Duration) *float64 {
		if d == nil {
			return nil
		}
		x := float64(*d) / 1e6
		return &x
	}
	j := jsonLoad{ConfigIndex: l.ConfigIndex, ConfigID: l.ConfigID, ServerID: l.ServerID, Label: l.Label, LoadMode: string(l.LoadMode),
		Concurrency: nz(l.Concurrency), TargetRate: null(l.TargetRate), Measured: l.Measured, Completed: l.Completed, Failed: l.Failed,
		AchievedRate: null(l.AchievedRate), OutputTokensPerS: null(l.OutputTokensPerS), SendLagP50: ms(l.SendLagP50),
		SendLagP99: ms(l.SendLagP99), InFlightMax: nz(l.InFlightMax), Good: l.Good, Goodput: null(l.Goodput), SLOAttained: null(l.SLOAttained)}
	if l.Window > 0 {
		j.Window = null(l.Window.Seconds())
	}
	s := l.Server
	j.ServerRequests, j.ServerTTFTMean, j.ServerE2EMean, j.ServerQueueMean = s.Requests, ms(s.TTFTMean), ms(s.E2EMean), ms(s.QueueMean)
	j.ServerPrefillMean, j.ServerDecodeMean, j.ServerPromptTokens = ms(s.PrefillMean), ms(s.DecodeMean), s.PromptTokens
	j.ServerGenerationTokens, j.PrefixCacheQueries, j.PrefixCacheHits = s.GenerationTokens, s.CacheQueries, s.CacheHits
	j.ClientOverheadMean = ms(s.ClientOverheadMean)
	return j
}

// Encode writes s.
func (e *JSONEncoder) Encode(s *Report) error {
	null := tabular.Null
	out := struct {
		SchemaVersion int                 `json:"schema_version"`
		Experiment    string              `json:"experiment"`
		Status        results.Status      `json:"status"`
		StartTime     string              `json:"start_time"`
		Requests      int                 `json:"requests"`
		Failed        int                 `json:"failed"`
		Rows          []jsonRow           `json:"rows"`
		Fits          []decompose.JSONFit `json:"fits"`
		Load          []jsonLoad          `json:"load,omitempty"`
	}{SchemaVersion: results.FormatVersion, Experiment: s.Manifest.Experiment.Name, Status: s.Status,
		StartTime: s.Manifest.Start.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), Requests: s.Requests, Failed: s.Failed,
		Rows: []jsonRow{}, Fits: decompose.ToJSON(s.Fits)}
	for _, r := range s.Rows {
		out.Rows = append(out.Rows, jsonRow{ConfigIndex: r.ConfigIndex, ConfigID: r.ConfigID, ServerID: r.ServerID,
			Label: r.Label, Metric: r.Metric, N: r.N, NFailed: r.NFailed, NMissing: r.NMissing, Min: null(r.Min),
			Median: null(r.Median), P95: null(r.P95), P99: null(r.P99), Max: null(r.Max), Mean: null(r.Mean),
			Stddev: null(r.Stddev), MedianCILow: null(r.MedianCILow), MedianCIHigh: null(r.MedianCIHigh),
			MedianCILevel: null(r.MedianCILevel), Warnings: tabular.List(r.Warnings)})
	}
	for _, l := range s.Load {
		out.Load = append(out.Load, toJSONLoad(l))
	}
	enc := json.NewEncoder(e.w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
