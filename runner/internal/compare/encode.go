package compare

import (
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Encoder writes a Report in one format.
type Encoder interface {
	Encode(*Report) error
}

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

// The encoders implement Encoder.
var (
	_ Encoder = (*TextEncoder)(nil)
	_ Encoder = (*MarkdownEncoder)(nil)
	_ Encoder = (*CSVEncoder)(nil)
	_ Encoder = (*JSONEncoder)(nil)
)

// oneSided yields "old" with the configs only the old folder has, then "new" with those only
// the new folder has, each only where there is one: the text and markdown encoders list them
// alike.
func oneSided(r *Report) iter.Seq2[string, []ConfigRef] {
	return func(yield func(string, []ConfigRef) bool) {
		if len(r.OnlyOld) > 0 && !yield("old", r.OnlyOld) {
			return
		}
		if len(r.OnlyNew) > 0 {
			yield("new", r.OnlyNew)
		}
	}
}

// num formats a median or interval bound for people: three decimals for durations, the
// shortest exact form for counts; "-" when missing.
func num(x float64, unit string) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case unit == "ms":
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// medianCell is "median [low, high]", or the median alone without an interval.
func medianCell(s Sample, unit string) string {
	if math.IsNaN(s.Median) {
		return "-"
	}
	if math.IsNaN(s.CILow) {
		return num(s.Median, unit)
	}
	return fmt.Sprintf("%s [%s, %s]", num(s.Median, unit), num(s.CILow, unit), num(s.CIHigh, unit))
}

// medianOnly is the median alone, "-" when missing.
func medianOnly(s Sample, unit string) string { return num(s.Median, unit) }

// changeCell is the change column: the percent change when significant, ~ when not, - when
// not tested.
func changeCell(r Row) string {
	switch {
	case math.IsNaN(r.P):
		return "-"
	case !r.Significant:
		return "~"
	case math.IsNaN(r.ChangePct):
		return "changed"
	}
	return pct(r.ChangePct)
}

func nCell(r Row) string { return fmt.Sprintf("%d+%d", r.Old.N, r.New.N) }

func gateCell(r Row) string {
	switch r.Gate {
	case GateNone:
		return ""
	case GateFail:
		return "FAIL " + r.Threshold
	}
	return string(r.Gate) + " " + r.Threshold
}

// pEq formats a p-value as p=0.012 or p<0.001.
func pEq(p, alpha float64) string {
	s := pValue(p, alpha)
	if strings.HasPrefix(s, "<") {
		return "p" + s
	}
	return "p=" + s
}

// headline describes one folder in a line.
func headline(f Folder) string {
	return fmt.Sprintf("experiment %s, %s, %d configs, %d measured requests (%d failed), started %s, runner %s",
		f.Experiment, f.Status, f.Configs, f.Measured, f.Failed, f.Start.UTC().Format("2006-01-02T15:04:05Z"), orUnknown(f.RunnerVersion))
}

// method describes the test in a sentence.
func method(r *Report) string {
	return fmt.Sprintf("Two-sided Mann-Whitney U test at alpha %g; medians with %g%% confidence intervals; ~ means no significant change.",
		r.Alpha, r.CILevel*100)
}

// narrowMethod describes the test in a sentence, for a table whose medians stand without their
// intervals.
func narrowMethod(r *Report) string {
	return fmt.Sprintf("Two-sided Mann-Whitney U test at alpha %g; ~ means no significant change; --wide shows each median's %g%% confidence interval.",
		r.Alpha, r.CILevel*100)
}

// hasGate reports whether any row has a threshold.
func hasGate(r *Report) bool {
	for _, row := range r.Rows {
		if row.Threshold != "" {
			return true
		}
	}
	return false
}

// groupWarnings merges the warnings of each config's rows, apart for each presence: one entry
// per distinct text, with the metrics it concerns.
func groupWarnings(rows []Row) []tabular.Warning {
	noted := make([]tabular.Noted, len(rows))
	for i, r := range rows {
		noted[i] = tabular.Noted{Group: r.ConfigID + "\x00" + string(r.Presence), Label: r.Label, Metric: r.Metric, Warnings: r.Warnings}
	}
	return tabular.GroupWarnings(noted)
}

// envSummary is the line shown when no field that matters differs.
func envSummary(env []EnvField) string {
	display := map[string]string{"gpu": "GPU", "gpu_driver": "GPU driver", "server_command": "server command line"}
	var names []string
	for _, f := range env {
		if f.Matters {
			name, ok := display[f.Name]
			if !ok {
				name = strings.ReplaceAll(f.Name, "_", " ")
			}
			names = append(names, name)
		}
	}
	return "Environment: the same " + joinAnd(names) + "."
}

// gateLine is the gate's outcome in a line.
func gateLine(g Gate) string {
	var ts []string
	for _, t := range g.Thresholds {
		ts = append(ts, t.String())
	}
	rules := "no thresholds"
	if len(ts) > 0 {
		rules = "thresholds " + strings.Join(ts, ", ")
	}
	if g.Strict {
		rules += ", strict"
	}
	switch g.Result {
	case GateFailed:
		return "Gate: FAIL (" + rules + ")"
	case GatePassed:
		return "Gate: pass (" + rules + ")"
	}
	return "Gate: off (" + rules + ")"
}

// tableHeader is the header of the table of compared rows, without the gate column.
func tableHeader(r *Report) []string {
	ci := fmt.Sprintf("%g%% CI", r.CILevel*100)
	return []string{"config", "metric", "old median [" + ci + "]", "new median [" + ci + "]", "change", "p", "n"}
}
