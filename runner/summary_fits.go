package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/decompose"
)

// fitsHeading introduces the prefill/decode fits below the summary table.
var fitsHeading = fmt.Sprintf("prefill/decode fit (least squares over per-request rows; %.0f%% intervals from Student's t)",
	decompose.Level*100)

// writeFitsText writes the fits of each sweep as a trailing block of the text format.
func writeFitsText(w io.Writer, sweeps []decompose.Sweep) {
	if len(sweeps) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", fitsHeading)
	for _, s := range sweeps {
		fmt.Fprintf(w, "  %s:\n", s.Name)
		for _, f := range []decompose.Fit{s.Prefill, s.Decode} {
			fmt.Fprintf(w, "    %-7s  %s: %s\n", f.Model, f.Model.Equation(), f.Describe())
			for _, x := range f.Warnings {
				fmt.Fprintf(w, "             note: %s\n", x)
			}
		}
	}
}

// writeFitsMarkdown writes the fits of each sweep as a trailing table of the markdown format.
func writeFitsMarkdown(w io.Writer, sweeps []decompose.Sweep) {
	if len(sweeps) == 0 {
		return
	}
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	head, rest, _ := strings.Cut(fitsHeading, " (")
	fmt.Fprintf(w, "\n**%s** (%s\n\n", strings.ToUpper(head[:1])+head[1:], rest)
	fmt.Fprintln(w, "| sweep | model | result | notes |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, s := range sweeps {
		for _, f := range []decompose.Fit{s.Prefill, s.Decode} {
			fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", esc.Replace(s.Name), f.Model.Equation(), esc.Replace(f.Describe()),
				esc.Replace(strings.Join(f.Warnings, "; ")))
		}
	}
}

// fitCoefJSON is one fitted coefficient in the json format; a missing value is null.
type fitCoefJSON struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Estimate *float64 `json:"estimate"`
	StdError *float64 `json:"std_error"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
}

// fitJSON is one model fitted over one sweep in the json format.
type fitJSON struct {
	Sweep        string        `json:"sweep"`
	Model        string        `json:"model"`
	Equation     string        `json:"equation"`
	Rows         string        `json:"rows"`
	Skipped      string        `json:"skipped,omitempty"`
	N            int           `json:"n"`
	Configs      int           `json:"configs"`
	PromptTokens string        `json:"prompt_tokens_source,omitempty"`
	Coefficients []fitCoefJSON `json:"coefficients"`
	R2           *float64      `json:"r2"`
	CILevel      float64       `json:"ci_level"`
	Warnings     []string      `json:"warnings"`
}

// fitsJSON returns the fits of each sweep for the json format.
func fitsJSON(sweeps []decompose.Sweep) []fitJSON {
	num := func(f float64) *float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	coef := func(name, unit string, e decompose.Estimate) fitCoefJSON {
		return fitCoefJSON{Name: name, Unit: unit, Estimate: num(e.Value), StdError: num(e.StdErr), CILow: num(e.Low), CIHigh: num(e.High)}
	}
	out := []fitJSON{}
	for _, s := range sweeps {
		for _, f := range []decompose.Fit{s.Prefill, s.Decode} {
			j := fitJSON{Sweep: s.Name, Model: string(f.Model), Equation: f.Model.Equation(), Rows: "per_request",
				Skipped: f.Skipped, N: len(f.X), Configs: f.Configs, PromptTokens: f.PromptSource,
				Coefficients: []fitCoefJSON{}, CILevel: decompose.Level, Warnings: append([]string{}, f.Warnings...)}
			if f.OK() {
				j.R2 = num(f.Line.R2)
				if f.Model == decompose.Prefill {
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
