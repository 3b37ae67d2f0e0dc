package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Encoder writes a Report in one format.
type Encoder interface {
	Encode(*Report) error
}

// The encoders implement Encoder.
var (
	_ Encoder = (*TextEncoder)(nil)
	_ Encoder = (*JSONEncoder)(nil)
)

// formats are the output formats of a Report, in the order help lists them.
var formats = tabular.NewFormats(
	tabular.Format[Encoder]{Name: "text", New: func(w io.Writer) Encoder { return NewTextEncoder(w) }},
	tabular.Format[Encoder]{Name: "json", New: func(w io.Writer) Encoder { return NewJSONEncoder(w) }},
)

// Formats returns the names of the output formats, in the order help lists them.
func Formats() []string { return formats.Names() }

// NewEncoder returns the encoder of a format named by Formats over w.
func NewEncoder(format string, w io.Writer) (Encoder, error) { return formats.New(format, w) }

// TextEncoder writes a Report as one aligned table: server, check, result, and what was found
// or, for a check that did not pass, what the runner does without it; then one line that says
// whether the experiment can run as asked.
type TextEncoder struct{ w io.Writer }

// NewTextEncoder returns a TextEncoder writing to w.
func NewTextEncoder(w io.Writer) *TextEncoder { return &TextEncoder{w: w} }

// Encode writes r.
func (e *TextEncoder) Encode(r *Report) error {
	w := tabular.NewErrWriter(e.w)
	fmt.Fprintf(w, "experiment %s\n\n", r.Experiment)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tcheck\tresult\tfound\twithout it, the runner")
	// What a check found may quote the server (an answer's body, an error): its control
	// characters are shown, not sent to the terminal, as everywhere else the runner prints.
	row := func(server string, c Check) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", server, c.Name, c.Result, tabular.Visible(oneLine(c.Detail)), tabular.Visible(orDash(c.Without)))
	}
	for _, s := range r.Servers {
		for _, c := range s.Checks {
			row(s.ID+" ("+s.Engine+")", c)
		}
	}
	for _, c := range r.Machine {
		row("machine", c)
	}
	tw.Flush()
	if r.Failed() {
		fmt.Fprintln(w, "\nsomething the experiment needs is missing: see the checks that failed")
	} else {
		fmt.Fprintln(w, "\neverything the experiment needs is there")
	}
	return w.Err()
}

// oneLine keeps a detail on its row: a multi-line error is joined with "; ".
func oneLine(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JSONEncoder writes a Report as one indented JSON object: "experiment", "servers" (each with
// its "checks": check, result, detail and, for one that did not pass, without), "machine" and
// "failed".
type JSONEncoder struct{ w io.Writer }

// NewJSONEncoder returns a JSONEncoder writing to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder { return &JSONEncoder{w: w} }

// Encode writes r.
func (e *JSONEncoder) Encode(r *Report) error {
	rep := *r
	if rep.Servers == nil {
		rep.Servers = []Server{}
	}
	if rep.Machine == nil {
		rep.Machine = []Check{}
	}
	out := struct {
		Report
		Failed bool `json:"failed"`
	}{rep, r.Failed()}
	enc := json.NewEncoder(e.w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
