package decompose

import (
	"fmt"
	"io"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Heading introduces the fits below a table of summary statistics.
var Heading = fmt.Sprintf("prefill/decode fit (least squares over per-request rows; %.0f%% intervals from Student's t)",
	Level*100)

// TextEncoder writes the fits of sweeps as a trailing block of aligned text: a blank line, the
// heading, then each sweep's two fits, each as its equation, its coefficients, its R² and what
// it was fitted on, and its notes, on lines of their own so that they fit 100 columns. No
// sweeps write nothing.
type TextEncoder struct{ w io.Writer }

// NewTextEncoder returns a TextEncoder writing to w.
func NewTextEncoder(w io.Writer) *TextEncoder { return &TextEncoder{w: w} }

// Encode writes the fits of sweeps.
func (e *TextEncoder) Encode(sweeps []Sweep) error {
	if len(sweeps) == 0 {
		return nil
	}
	w := tabular.NewErrWriter(e.w)
	fmt.Fprintf(w, "\n%s:\n", Heading)
	for _, s := range sweeps {
		fmt.Fprintf(w, "  %s:\n", s.Name)
		for _, f := range []Fit{s.Prefill, s.Decode} {
			coefs, quality := f.describe()
			fmt.Fprintf(w, "    %-7s  %s\n             %s\n", f.Model, f.Model.Equation(), coefs)
			if quality != "" {
				fmt.Fprintf(w, "             %s\n", quality)
			}
			for _, x := range f.Warnings {
				fmt.Fprintln(w, tabular.Wrap("note: "+x, tabular.Width, "             ", "                   "))
			}
		}
	}
	return w.Err()
}

// MarkdownEncoder writes the fits of sweeps as a trailing markdown table, one row per sweep and
// model. No sweeps write nothing.
type MarkdownEncoder struct{ w io.Writer }

// NewMarkdownEncoder returns a MarkdownEncoder writing to w.
func NewMarkdownEncoder(w io.Writer) *MarkdownEncoder { return &MarkdownEncoder{w: w} }

// Encode writes the fits of sweeps.
func (e *MarkdownEncoder) Encode(sweeps []Sweep) error {
	if len(sweeps) == 0 {
		return nil
	}
	w := tabular.NewErrWriter(e.w)
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	head, rest, _ := strings.Cut(Heading, " (")
	fmt.Fprintf(w, "\n**%s** (%s\n\n", strings.ToUpper(head[:1])+head[1:], rest)
	fmt.Fprintln(w, "| sweep | model | result | notes |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, s := range sweeps {
		for _, f := range []Fit{s.Prefill, s.Decode} {
			fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", esc.Replace(s.Name), f.Model.Equation(), esc.Replace(f.Describe()),
				esc.Replace(strings.Join(f.Warnings, "; ")))
		}
	}
	return w.Err()
}

// JSONCoef is one fitted coefficient in a json output; a missing value is null.
type JSONCoef struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Estimate *float64 `json:"estimate"`
	StdError *float64 `json:"std_error"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
}

// JSONFit is one model fitted over one sweep in a json output; its field names are stable.
type JSONFit struct {
	Sweep        string     `json:"sweep"`
	Model        string     `json:"model"`
	Equation     string     `json:"equation"`
	Rows         string     `json:"rows"`
	Skipped      string     `json:"skipped,omitempty"`
	N            int        `json:"n"`
	Configs      int        `json:"configs"`
	PromptTokens string     `json:"prompt_tokens_source,omitempty"`
	Coefficients []JSONCoef `json:"coefficients"`
	R2           *float64   `json:"r2"`
	CILevel      float64    `json:"ci_level"`
	Warnings     []string   `json:"warnings"`
}

// ToJSON returns the two fits of each sweep, prefill then decode, for a json output; never nil.
func ToJSON(sweeps []Sweep) []JSONFit {
	coef := func(name, unit string, e Estimate) JSONCoef {
		return JSONCoef{Name: name, Unit: unit, Estimate: tabular.Null(e.Value), StdError: tabular.Null(e.StdErr),
			CILow: tabular.Null(e.Low), CIHigh: tabular.Null(e.High)}
	}
	out := []JSONFit{}
	for _, s := range sweeps {
		for _, f := range []Fit{s.Prefill, s.Decode} {
			j := JSONFit{Sweep: s.Name, Model: string(f.Model), Equation: f.Model.Equation(), Rows: "per_request",
				Skipped: f.Skipped, N: len(f.X), Configs: f.Configs, PromptTokens: f.PromptSource,
				Coefficients: []JSONCoef{}, CILevel: Level, Warnings: append([]string{}, f.Warnings...)}
			if f.OK() {
				j.R2 = tabular.Null(f.Line.R2)
				if f.Model == Prefill {
					j.Coefficients = append(j.Coefficients, coef("a", "ms", f.Line.Intercept), coef("b", "ms_per_token", f.Line.Slope))
				} else {
					j.Coefficients = append(j.Coefficients, coef("c", "ms_per_token", f.Line.Slope))
				}
			}
			out = append(out, j)
		}
	}
	return out
}
