// Package decompose splits a sweep's latency into a prefill and a decode part by least squares:
// TTFT ≈ a + b·prompt_tokens over the configs of a prefill sweep, and e2e ≈ TTFT +
// c·(output_tokens − 1) over the configs of a decode sweep. a is the fixed cost of a request
// (connection, queueing, scheduling), b the prefill cost per prompt token and c the decode cost
// per output token after the first.
//
// The fits use one point per measured request, not one per config median, so that the
// intervals reflect the spread of single requests and a config with more successful requests
// weighs more. Warm-up requests, the first request after a boot and failed requests are left
// out, as in the summary.
package decompose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// LengthAxes are the axis paths that set a request's prompt or output length. The fits use the
// lengths themselves as x, so configs that differ only in these axes belong to one sweep.
var LengthAxes = []string{"request.prompt_tokens", "request.max_tokens", "request.min_tokens",
	"request.prompt", "request.prompt_name"}

// Model names which of the two fits a Fit is.
type Model string

// The two models.
const (
	// Prefill is ttft_ms ≈ a + b·prompt_tokens.
	Prefill Model = "prefill"
	// Decode is e2e_ms − ttft_ms ≈ c·(output_tokens − 1).
	Decode Model = "decode"
)

// Prompt token sources of a prefill fit's x values.
const (
	PromptReported  = "reported"  // usage.prompt_tokens from the server, for every row
	PromptRequested = "requested" // the prompt_tokens the experiment asked for, for every row
	PromptMixed     = "mixed"     // reported where the server said, requested elsewhere
)

// Fit is one model fitted over one sweep's requests.
type Fit struct {
	Model Model
	// Line is the fit: for Prefill, Intercept is a (ms) and Slope is b (ms per prompt token);
	// for Decode, Slope is c (ms per output token). Valid only when Skipped is empty.
	Line Line
	// Skipped says why there is no fit, in a phrase; empty when there is one.
	Skipped string
	// Configs is the number of configs that contributed rows.
	Configs int
	// Lengths is the number of distinct x values.
	Lengths int
	// PromptSource is where a Prefill fit's prompt token counts came from (PromptReported,
	// PromptRequested or PromptMixed); empty for Decode.
	PromptSource string
	// X and Y are the points fitted, one per request: prompt tokens and TTFT (ms) for Prefill,
	// output tokens − 1 and e2e − TTFT (ms) for Decode.
	X, Y []float64
	// Warnings say what the numbers rest on or cannot carry, one phrase each.
	Warnings []string
}

// OK reports whether the fit has coefficients.
func (f *Fit) OK() bool { return f.Skipped == "" }

// Sweep is a set of configs that differ only in their length axes (LengthAxes), with the two
// fits over their requests.
type Sweep struct {
	// Name is the values of the other axes ("dtype=half,api=chat"), or "all configs" when the
	// configs have no other axis.
	Name string
	// Axes are the values of the other axes, by dotted path.
	Axes      []experiment.AxisValue
	ConfigIDs []string // in expansion order
	Prefill   Fit
	Decode    Fit
}

// AllConfigs is the name of the sweep of an experiment whose only axes are lengths.
const AllConfigs = "all configs"

func isLengthAxis(path string) bool { return slices.Contains(LengthAxes, path) }

// shortName is the last element of a dotted path, as config labels write it.
func shortName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// otherAxes returns a config's axes other than the length axes, and their name.
func otherAxes(c experiment.Config) ([]experiment.AxisValue, string) {
	var axes []experiment.AxisValue
	var parts []string
	for _, a := range c.Axes {
		if !isLengthAxis(a.Path) {
			axes = append(axes, a)
			parts = append(parts, shortName(a.Path)+"="+a.Value)
		}
	}
	if len(parts) == 0 {
		return nil, AllConfigs
	}
	return axes, strings.Join(parts, ",")
}

// usable reports whether a request is one the fits may use: measured, successful, with a TTFT.
func usable(r *record.Request) bool {
	return r.Phase == record.PhaseMeasure && r.Status == record.StatusOK && r.TTFT != nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Sweeps groups the configs into sweeps and fits both models over each sweep's measured,
// successful requests. Sweeps come in the order of their first config in the expansion;
// requests of a config the list lacks join the sweep named AllConfigs.
func Sweeps(configs []experiment.Config, reqs []record.Request) []Sweep {
	f := NewFitter(configs)
	for i := range reqs {
		f.Add(&reqs[i])
	}
	return f.Sweeps()
}

// Fitter gathers the points of the fits one request at a time, keeping two numbers per usable
// request of each model instead of the requests, so that a folder of any size is fitted in the
// memory of its points: Sweeps is a Fitter over a slice of requests.
type Fitter struct {
	out     []*sweepFit
	byName  map[string]*sweepFit
	sweepOf map[string]*sweepFit // config id → sweep
}

// sweepFit is one sweep of a Fitter with the points of its two fits.
type sweepFit struct {
	Sweep
	prefill prefillPoints
	decode  decodePoints
}

// NewFitter returns a Fitter of the sweeps of configs: their order and names are those of
// Sweeps.
func NewFitter(configs []experiment.Config) *Fitter {
	f := &Fitter{byName: map[string]*sweepFit{}, sweepOf: map[string]*sweepFit{}}
	sorted := append([]experiment.Config(nil), configs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for _, c := range sorted {
		if f.sweepOf[c.ID] != nil {
			continue
		}
		s := f.get(otherAxes(c))
		s.ConfigIDs = append(s.ConfigIDs, c.ID)
		f.sweepOf[c.ID] = s
	}
	return f
}

// get returns the sweep called name, made with axes if it is new.
func (f *Fitter) get(axes []experiment.AxisValue, name string) *sweepFit {
	s := f.byName[name]
	if s == nil {
		s = &sweepFit{Sweep: Sweep{Name: name, Axes: axes}}
		s.prefill.init()
		s.decode.init()
		f.byName[name] = s
		f.out = append(f.out, s)
	}
	return s
}

// Add takes in one request row; rows come in file order.
func (f *Fitter) Add(r *record.Request) {
	s := f.sweepOf[r.ConfigID]
	if s == nil {
		s = f.get(nil, AllConfigs)
		s.ConfigIDs = append(s.ConfigIDs, r.ConfigID)
		f.sweepOf[r.ConfigID] = s
	}
	if !usable(r) {
		return
	}
	s.prefill.add(r)
	s.decode.add(r)
}

// Sweeps returns the sweeps with both fits over the requests added so far.
func (f *Fitter) Sweeps() []Sweep {
	res := make([]Sweep, len(f.out))
	for i, s := range f.out {
		res[i] = s.Sweep
		res[i].Prefill = s.prefill.fit()
		res[i].Decode = s.decode.fit()
	}
	return res
}

// prefillPoints are the points of a prefill fit and the counts its warnings rest on.
type prefillPoints struct {
	f                                    Fit
	configs                              map[string]bool
	lengths                              map[float64]bool
	reported, requested, noCount, differ int
}

func (p *prefillPoints) init() {
	p.f = Fit{Model: Prefill}
	p.configs, p.lengths = map[string]bool{}, map[float64]bool{}
}

// add takes in a usable request. The prompt length is the server's reported count when there
// is one, else the requested count.
func (p *prefillPoints) add(r *record.Request) {
	var n int
	switch {
	case r.PromptTokensReported != nil:
		n = *r.PromptTokensReported
		p.reported++
		if r.PromptTokensRequested != nil && *r.PromptTokensRequested != n {
			p.differ++
		}
	case r.PromptTokensRequested != nil:
		n = *r.PromptTokensRequested
		p.requested++
	default:
		p.noCount++
		return
	}
	p.f.X = append(p.f.X, float64(n))
	p.f.Y = append(p.f.Y, ms(*r.TTFT))
	p.configs[r.ConfigID] = true
	p.lengths[float64(n)] = true
}

// fit fits ttft_ms ≈ a + b·prompt_tokens over the points.
func (p *prefillPoints) fit() Fit {
	f := p.f
	reported, requested, noCount, differ := p.reported, p.requested, p.noCount, p.differ
	f.Configs, f.Lengths = len(p.configs), len(p.lengths)
	switch {
	case reported > 0 && requested > 0:
		f.PromptSource = PromptMixed
		f.Warnings = append(f.Warnings, fmt.Sprintf("prompt tokens as requested for %d of %d requests (the server reported none for them)",
			requested, reported+requested))
	case reported > 0:
		f.PromptSource = PromptReported
	case requested > 0:
		f.PromptSource = PromptRequested
	}
	if differ > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("the server's prompt token count differs from the requested one in %d requests", differ))
	}
	if noCount > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%d requests without a prompt token count left out", noCount))
	}
	switch {
	case len(f.X) == 0 && noCount > 0:
		f.Skipped = "no prompt token counts (none requested, none reported)"
		return f
	case len(f.X) == 0:
		f.Skipped = "no measured successful requests"
		return f
	case f.Lengths == 1:
		f.Skipped = fmt.Sprintf("one prompt length (%g tokens): no slope to fit", f.X[0])
		return f
	}
	l, err := Linear(f.X, f.Y)
	if err != nil {
		f.Skipped = err.Error()
		return f
	}
	f.Line = l
	f.Warnings = append(f.Warnings, spreadWarnings(l, f.Lengths, "prompt")...)
	return f
}

// decodePoints are the points of a decode fit and the counts its warnings rest on.
type decodePoints struct {
	f       Fit
	configs map[string]bool
	lengths map[float64]bool
	missing int
}

func (p *decodePoints) init() {
	p.f = Fit{Model: Decode}
	p.configs, p.lengths = map[string]bool{}, map[float64]bool{}
}

// add takes in a usable request: one that has an e2e time and an output token count is a
// point.
func (p *decodePoints) add(r *record.Request) {
	if r.E2E == nil || r.OutputTokens == nil || *r.OutputTokens < 1 {
		p.missing++
		return
	}
	x := float64(*r.OutputTokens - 1)
	p.f.X = append(p.f.X, x)
	p.f.Y = append(p.f.Y, ms(*r.E2E)-ms(*r.TTFT))
	p.configs[r.ConfigID] = true
	p.lengths[x] = true
}

// fit fits e2e_ms − ttft_ms ≈ c·(output_tokens − 1) over the points.
func (p *decodePoints) fit() Fit {
	f := p.f
	missing := p.missing
	f.Configs, f.Lengths = len(p.configs), len(p.lengths)
	if missing > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%d requests without an e2e time or an output token count left out", missing))
	}
	if len(f.X) == 0 {
		f.Skipped = "no measured successful requests with output token counts"
		return f
	}
	l, err := Proportional(f.X, f.Y)
	if err != nil {
		f.Skipped = "every request generated a single token: nothing to decode"
		return f
	}
	if f.Lengths == 1 {
		// With one length the line through the origin is the mean, and R² says nothing.
		l.R2 = math.NaN()
		f.Warnings = append(f.Warnings, fmt.Sprintf("one output length (%g tokens after the first): c is a mean, R² is undefined", f.X[0]))
	}
	f.Line = l
	f.Warnings = append(f.Warnings, spreadWarnings(l, f.Lengths, "output")...)
	return f
}

// spreadWarnings says when a fit rests on too little: no residual degrees of freedom for an
// interval, or two lengths only, so the straight line is assumed rather than tested.
func spreadWarnings(l Line, lengths int, what string) []string {
	var w []string
	if l.DF < 1 {
		w = append(w, fmt.Sprintf("%s: too few for an interval", tabular.Plural(l.N, "request")))
	}
	if lengths == 2 {
		w = append(w, fmt.Sprintf("two %s lengths only: a straight line is assumed, not tested", what))
	}
	return w
}

// Equation returns the model as a formula over the result folder's column names.
func (m Model) Equation() string {
	if m == Prefill {
		return "ttft_ms ≈ a + b·prompt_tokens"
	}
	return "e2e_ms ≈ ttft_ms + c·(output_tokens − 1)"
}

// Num formats a coefficient with four significant digits, and NaN as "-".
func Num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.4g", v), ".")
}

// FormatEstimate renders an estimate with its interval and unit: "0.05012 [0.04901, 0.05123]
// ms/token", or without the interval when there is none.
func FormatEstimate(e Estimate, unit string) string {
	if math.IsNaN(e.Low) {
		return Num(e.Value) + " " + unit + " (no interval)"
	}
	return fmt.Sprintf("%s [%s, %s] %s", Num(e.Value), Num(e.Low), Num(e.High), unit)
}

// Describe returns the fit in one line: its coefficients with their intervals, R², and the rows
// it rests on; or why there is none.
func (f *Fit) Describe() string {
	coefs, quality := f.describe()
	if quality == "" {
		return coefs
	}
	return coefs + ", " + quality
}

// describe returns Describe's two parts: the coefficients (or why there are none), and the fit's
// R² and what it was fitted on ("" when it was not fitted).
func (f *Fit) describe() (coefs, quality string) {
	if !f.OK() {
		return "not fitted: " + f.Skipped, ""
	}
	if f.Model == Prefill {
		coefs = fmt.Sprintf("a = %s, b = %s", FormatEstimate(f.Line.Intercept, "ms"), FormatEstimate(f.Line.Slope, "ms/token"))
	} else {
		coefs = fmt.Sprintf("c = %s", FormatEstimate(f.Line.Slope, "ms/token"))
	}
	quality = fmt.Sprintf("R² %s, %d requests of %d configs", Num(f.Line.R2), f.Line.N, f.Configs)
	if f.Model == Prefill {
		quality += fmt.Sprintf(" (prompt tokens %s)", f.PromptSource)
	}
	return coefs, quality
}
