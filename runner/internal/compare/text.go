package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// TextEncoder writes a Report as aligned text for a terminal: the two folders, a table of the
// configs on both sides, the configs on one side only, the environment, the warnings and the
// gate.
type TextEncoder struct {
	w    io.Writer
	wide bool
}

// NewTextEncoder returns a TextEncoder writing to w. Its table fits 100 columns: each config's
// label heads its rows and the medians stand without their intervals; Wide shows the intervals.
func NewTextEncoder(w io.Writer) *TextEncoder { return &TextEncoder{w: w} }

// Wide makes the table show each median's confidence interval, a config's label beside its
// first row, and the lines above it unwrapped; it returns e.
func (e *TextEncoder) Wide(wide bool) *TextEncoder {
	e.wide = wide
	return e
}

// Encode writes r.
func (e *TextEncoder) Encode(r *Report) error {
	w := tabular.NewErrWriter(e.w)
	e.say(w, "old: ", "     ", fmt.Sprintf("%s (%s)", r.Old.Dir, headline(r.Old)))
	e.say(w, "new: ", "     ", fmt.Sprintf("%s (%s)", r.New.Dir, headline(r.New)))
	if e.wide {
		fmt.Fprintln(w, method(r))
	} else {
		e.say(w, "", "", narrowMethod(r))
	}
	if r.JoinBy == ByLabel {
		fmt.Fprintln(w, "Configs are joined by label.")
	}
	e.writeRows(w, r)
	writeOneSided(w, r)
	fmt.Fprintln(w)
	writeEnv(w, r.Env)
	if ws := groupWarnings(r.Rows); len(ws) > 0 || len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, x := range ws {
			e.say(w, "  ", "    ", fmt.Sprintf("%s: %s (%s)", x.Label, x.Text, strings.Join(x.Metrics, ", ")))
		}
		for _, x := range r.Warnings {
			e.say(w, "  ", "    ", x)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, gateLine(r.Gate))
	for _, reason := range r.Gate.Reasons {
		fmt.Fprintf(w, "  %s\n", reason)
	}
	return w.Err()
}

// say writes text as a line after first, wrapped to the width of the narrow table with the
// lines after the first indented by rest; wide, it writes it unwrapped.
func (e *TextEncoder) say(w io.Writer, first, rest, text string) {
	if e.wide {
		fmt.Fprintln(w, first+text)
		return
	}
	fmt.Fprintln(w, tabular.Wrap(text, tabular.Width, first, rest))
}

// writeRows writes the table of the configs on both sides, one row a metric, or says that
// there is none.
func (e *TextEncoder) writeRows(w io.Writer, r *Report) {
	header := tableHeader(r)
	gated := hasGate(r)
	if gated {
		header = append(header, "gate")
	}
	var lines [][]string
	for _, row := range r.Rows {
		if row.Presence != Both {
			continue
		}
		median := medianCell
		if !e.wide {
			median = medianOnly
		}
		cells := []string{row.Label, row.Metric, median(row.Old, row.Unit), median(row.New, row.Unit),
			changeCell(row), pValue(row.P, r.Alpha), nCell(row)}
		if gated {
			cells = append(cells, gateCell(row))
		}
		lines = append(lines, cells)
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "\nNo config is in both folders: nothing to compare.")
		return
	}
	fmt.Fprintln(w)
	if e.wide {
		writeTable(w, header, lines, 2)
	} else {
		header[2], header[3] = "old median", "new median"
		writeLabelledTable(w, header, lines)
	}
}

// writeOneSided lists the configs of each folder that the other lacks.
func writeOneSided(w io.Writer, r *Report) {
	for name, refs := range oneSided(r) {
		fmt.Fprintf(w, "\nConfigs only in the %s folder (not compared):\n", name)
		var ls [][]string
		for _, c := range refs {
			ls = append(ls, []string{c.Label, c.ID})
		}
		writeIndented(w, ls)
	}
}

// writeEnv writes how the two folders' environments compare: loudly the fields that make this
// a comparison of different experiments, else a line of what is the same, then the fields
// that differ without mattering.
func writeEnv(w io.Writer, env []EnvField) {
	var differ, info [][]string
	for _, f := range env {
		if !f.Differs() {
			continue
		}
		if f.Matters {
			differ = append(differ, []string{f.Name, f.Old, "->", f.New})
		} else {
			info = append(info, []string{f.Name, f.Old, "->", f.New})
		}
	}
	if len(differ) > 0 {
		fmt.Fprintln(w, "!!! THE ENVIRONMENTS DIFFER: this compares different experiments, not a change of one !!!")
		writeIndented(w, differ)
	} else {
		fmt.Fprintln(w, envSummary(env))
	}
	if len(info) > 0 {
		fmt.Fprintln(w, "Also different (for information):")
		writeIndented(w, info)
	}
}

// writeTable writes a header and rows with tabwriter: the first `left` columns left-aligned,
// the rest right-aligned.
func writeTable(w io.Writer, header []string, rows [][]string, left int) {
	widths := make([]int, left)
	for _, r := range append([][]string{header}, rows...) {
		for i := 0; i < left; i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		cells = append([]string(nil), cells...)
		for i := 0; i < left; i++ {
			cells[i] += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cells[i]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(header)
	prev := ""
	for _, r := range rows {
		// Show each config's label once, on its first row.
		if r[0] == prev {
			r = append([]string{""}, r[1:]...)
		} else {
			prev = r[0]
		}
		line(r)
	}
	tw.Flush()
}

// writeLabelledTable writes a header and rows whose first cell is a config's label: the label
// on a line of its own above its config's rows, the metric (the second cell) indented below it
// and aligned left, the rest aligned right. A long label then does not widen the table.
func writeLabelledTable(w io.Writer, header []string, rows [][]string) {
	lines := [][]string{append([]string{"config / metric"}, header[2:]...)}
	above := map[int]string{}
	prev := ""
	for i, r := range rows {
		if i == 0 || r[0] != prev {
			above[len(lines)] = r[0]
			prev = r[0]
		}
		lines = append(lines, append([]string{"  " + r[1]}, r[2:]...))
	}
	var buf strings.Builder
	writeTable(&buf, lines[0], lines[1:], 1)
	tabular.WriteLabelled(w, buf.String(), above)
}

// writeIndented writes rows as left-aligned columns indented by two spaces.
func writeIndented(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	tw.Flush()
}
