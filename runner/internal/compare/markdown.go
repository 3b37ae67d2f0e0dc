package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// MarkdownEncoder writes a Report as GitHub-flavoured markdown, for a pull-request comment or a
// CI step summary ($GITHUB_STEP_SUMMARY): the same parts as the text format, with significant
// changes in bold and a differing environment as a warning block.
type MarkdownEncoder struct{ w io.Writer }

// NewMarkdownEncoder returns a MarkdownEncoder writing to w.
func NewMarkdownEncoder(w io.Writer) *MarkdownEncoder { return &MarkdownEncoder{w: w} }

// mdCode puts text in a code span, which needs no escapes but a pipe's inside a table.
func mdCode(s string) string {
	s = strings.NewReplacer("`", "'", "\n", " ", "|", `\|`).Replace(s)
	return "`" + s + "`"
}

// Encode writes r.
func (e *MarkdownEncoder) Encode(r *Report) error {
	w := tabular.NewErrWriter(e.w)
	fmt.Fprintf(w, "### runner diff: %s → %s\n\n", mdCode(r.Old.Dir), mdCode(r.New.Dir))
	fmt.Fprintf(w, "- old: %s\n", tabular.Markdown(headline(r.Old)))
	fmt.Fprintf(w, "- new: %s\n", tabular.Markdown(headline(r.New)))
	fmt.Fprintf(w, "\n%s", tabular.Markdown(method(r)))
	if r.JoinBy == ByLabel {
		fmt.Fprint(w, " Configs are joined by label.")
	}
	fmt.Fprintln(w)
	differ := DifferingEnv(r.Env)
	if len(differ) > 0 {
		mdEnvWarning(w, r.Env)
	}
	mdRows(w, r)
	mdOneSided(w, r)
	if len(differ) == 0 {
		fmt.Fprintf(w, "\n%s\n", envSummary(r.Env))
	}
	mdEnvInfo(w, r.Env)
	mdWarnings(w, r)
	line := gateLine(r.Gate)
	head, rest, _ := strings.Cut(line, " (")
	fmt.Fprintf(w, "\n**%s** (%s\n", head, tabular.Markdown(rest))
	if len(r.Gate.Reasons) > 0 {
		fmt.Fprintln(w)
		for _, reason := range r.Gate.Reasons {
			fmt.Fprintf(w, "- %s\n", tabular.Markdown(reason))
		}
	}
	return w.Err()
}

// mdEnvWarning writes the warning block of environments that differ where it matters, with a
// table of the fields that do.
func mdEnvWarning(w io.Writer, env []EnvField) {
	fmt.Fprint(w, "\n> [!WARNING]\n> **The environments differ: this compares different experiments, not a change of one.**\n>\n")
	fmt.Fprint(w, "> | field | old | new |\n> | --- | --- | --- |\n")
	for _, f := range env {
		if f.Matters && f.Differs() {
			fmt.Fprintf(w, "> | %s | %s | %s |\n", f.Name, mdCode(f.Old), mdCode(f.New))
		}
	}
}

// mdRows writes the table of the configs on both sides, one row a metric, with significant
// changes and failed gates in bold, or says that there is none.
func mdRows(w io.Writer, r *Report) {
	gated := hasGate(r)
	header := tableHeader(r)
	align := []string{"---", "---", "---:", "---:", "---:", "---:", "---:"}
	if gated {
		header, align = append(header, "gate"), append(align, "---")
	}
	wrote := false
	for _, row := range r.Rows {
		if row.Presence != Both {
			continue
		}
		if !wrote {
			fmt.Fprintf(w, "\n| %s |\n| %s |\n", strings.Join(header, " | "), strings.Join(align, " | "))
			wrote = true
		}
		change := changeCell(row)
		if row.Significant {
			change = "**" + change + "**"
		}
		cells := []string{tabular.Markdown(row.Label), tabular.Markdown(row.Metric), medianCell(row.Old, row.Unit),
			medianCell(row.New, row.Unit), change, tabular.Markdown(pValue(row.P, r.Alpha)), nCell(row)}
		if gated {
			g := gateCell(row)
			if row.Gate == GateFail {
				g = "**" + g + "**"
			}
			cells = append(cells, g)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if !wrote {
		fmt.Fprintln(w, "\nNo config is in both folders: nothing to compare.")
	}
}

// mdOneSided lists the configs of each folder that the other lacks.
func mdOneSided(w io.Writer, r *Report) {
	for name, refs := range oneSided(r) {
		fmt.Fprintf(w, "\n**Configs only in the %s folder** (not compared):\n\n", name)
		for _, c := range refs {
			fmt.Fprintf(w, "- %s (%s)\n", tabular.Markdown(c.Label), mdCode(c.ID))
		}
	}
}

// mdEnvInfo lists the fields of the environments that differ without mattering.
func mdEnvInfo(w io.Writer, env []EnvField) {
	var info []EnvField
	for _, f := range env {
		if !f.Matters && f.Differs() {
			info = append(info, f)
		}
	}
	if len(info) > 0 {
		fmt.Fprint(w, "\nAlso different (for information):\n\n")
		for _, f := range info {
			fmt.Fprintf(w, "- %s: %s → %s\n", f.Name, mdCode(f.Old), mdCode(f.New))
		}
	}
}

// mdWarnings lists the rows' warnings, grouped by config, then the report's own.
func mdWarnings(w io.Writer, r *Report) {
	if ws := groupWarnings(r.Rows); len(ws) > 0 || len(r.Warnings) > 0 {
		fmt.Fprint(w, "\n**Warnings**\n\n")
		for _, x := range ws {
			fmt.Fprintf(w, "- %s: %s (%s)\n", tabular.Markdown(x.Label), tabular.Markdown(x.Text), tabular.Markdown(strings.Join(x.Metrics, ", ")))
		}
		for _, x := range r.Warnings {
			fmt.Fprintf(w, "- %s\n", tabular.Markdown(x))
		}
	}
}
