package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// page is what the HTML template shows.
type page struct {
	Title   string
	Compare bool
	Runs    []runView
	Fits    []fitView
	Charts  []chartView
	TPOT    []tpotView
	Skipped []skipView
	Level   string
	Load    *loadView // nil when no folder has a load point: the page is as it was before loads
}

type runView struct {
	Role, Name, Dir, Experiment, Status, Start, Runner, Servers string
	Requests, Failed                                            int
	Rows                                                        []summaryView
	Notes                                                       []string
}

type summaryView struct {
	Label, N, Failed, TTFT, TTFTCI, TPOTToken, TPOTEvent, E2E, Output string
}

type fitView struct {
	Role, Sweep, Model, Equation, Result string
	OK                                   bool
	Warnings                             []string
}

type chartView struct {
	Name, Title, Caption string
	SVG                  template.HTML
}

type tpotView struct {
	Role, Label, Event, Token, Ratio string
	Differs, Estimated               bool
}

type skipView struct{ Title, Reason string }

// inlineSVG returns an SVG document for inclusion in HTML: without its XML declaration or
// anything before the svg element. The SVG is the chart package's own output.
func inlineSVG(b []byte) template.HTML {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	return template.HTML(b)
}

func num(v float64, unit string) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}

func newPage(runs []*run) *page {
	pg := &page{Compare: len(runs) > 1, Level: fmt.Sprintf("%.0f%%", decompose.Level*100)}
	var names []string
	for _, r := range runs {
		names = append(names, r.f.Manifest.Experiment.Name)
		pg.Runs = append(pg.Runs, newRunView(r))
		for _, s := range r.sweeps {
			for _, f := range []decompose.Fit{s.Prefill, s.Decode} {
				pg.Fits = append(pg.Fits, fitView{Role: r.role, Sweep: s.Name, Model: string(f.Model),
					Equation: f.Model.Equation(), Result: f.Describe(), OK: f.OK(), Warnings: f.Warnings})
			}
		}
		for _, p := range tpotPairs(r) {
			pg.TPOT = append(pg.TPOT, tpotView{Role: r.role, Label: p.label, Event: num(p.event, " ms"),
				Token: num(p.token, " ms"), Ratio: fmt.Sprintf("%.2f×", p.ratio()), Differs: p.differs(), Estimated: !p.exact})
		}
	}
	pg.Load = newLoadView(runs)
	pg.Title = "runner report: " + names[0]
	if len(names) > 1 && names[1] != names[0] {
		pg.Title += " against " + names[1]
	}
	return pg
}

func newRunView(r *run) runView {
	m := r.f.Manifest
	v := runView{Role: r.role, Name: r.f.Name(), Dir: r.f.Dir, Experiment: m.Experiment.Name, Status: string(r.f.Status),
		Start: m.Start.UTC().Format("2006-01-02 15:04:05 UTC"), Runner: m.Runner.Version, Notes: r.f.Notes}
	var servers []string
	seen := map[string]bool{}
	for _, s := range m.Servers {
		d := strings.TrimSpace(strings.Join([]string{s.Engine, s.EngineVersion}, " "))
		if s.Model != "" {
			d += ", model " + s.Model
		}
		if !seen[d] {
			seen[d] = true
			servers = append(servers, d)
		}
	}
	v.Servers = strings.Join(servers, "; ")
	for _, q := range r.f.Requests {
		if q.Phase == record.PhaseMeasure {
			v.Requests++
			if q.Status != record.StatusOK {
				v.Failed++
			}
		}
	}
	rows := results.Summarize(r.f.Configs, r.f.Requests)
	for i := 0; i < len(rows); {
		j := i
		sv := summaryView{Label: rows[i].Label, N: fmt.Sprint(rows[i].N), Failed: fmt.Sprint(rows[i].NFailed)}
		for ; j < len(rows) && rows[j].ConfigID == rows[i].ConfigID; j++ {
			s := rows[j]
			switch s.Metric {
			case "ttft_ms":
				sv.N = fmt.Sprint(s.N)
				sv.TTFT = num(s.Median, "")
				sv.TTFTCI = "–"
				if !math.IsNaN(s.MedianCILow) {
					sv.TTFTCI = fmt.Sprintf("[%.2f, %.2f]", s.MedianCILow, s.MedianCIHigh)
				}
			case "tpot_token_ms":
				sv.TPOTToken = num(s.Median, "")
			case "tpot_event_ms":
				sv.TPOTEvent = num(s.Median, "")
			case "e2e_ms":
				sv.E2E = num(s.Median, "")
			case "output_tokens":
				sv.Output = "–"
				if !math.IsNaN(s.Median) {
					sv.Output = trimNumber(s.Median)
				}
			}
		}
		v.Rows = append(v.Rows, sv)
		i = j
	}
	return v
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; } h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .88rem; }
th, td { border: 1px solid #ddd; padding: .25rem .55rem; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
figure { margin: 1.2rem 0 2rem; } figure svg { width: 100%; height: auto; max-width: 60rem; display: block; }
figcaption { font-size: .9rem; color: #333; max-width: 60rem; }
.muted { color: #666; } .warn { color: #8a4b00; } dt { font-weight: 600; } dd { margin: 0 0 .4rem 1rem; }
code { font-size: .9em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Runs}}<dl>
<dt>{{if .Role}}{{.Role}}: {{end}}{{.Name}}</dt>
<dd>experiment <code>{{.Experiment}}</code>, status {{.Status}}, started {{.Start}}, runner {{.Runner}}{{if .Servers}}; {{.Servers}}{{end}}</dd>
<dd>{{.Requests}} measured requests ({{.Failed}} failed); folder <code>{{.Dir}}</code></dd>
{{range .Notes}}<dd class="warn">{{.}}</dd>{{end}}
</dl>
{{end}}
<p class="muted">Every figure and fit uses the measured requests that succeeded: warm-up requests, the first request
after each server boot and failed requests are left out. TTFT is the time from just before the request is sent to
the first event that carries text; TPOT per token divides the time between the first and last text events by the
tokens generated after the first event, TPOT per event by the text events after the first.</p>

{{with .Load}}{{template "load" .}}{{end}}<h2 id="fits">Prefill/decode decomposition</h2>
<p>Least squares over per-request rows (one point per measured request, not per config median) of each sweep, a sweep
being the configs that differ only in prompt or output length. <code>ttft_ms ≈ a + b·prompt_tokens</code> with the
prompt tokens the server reported, else those requested; <code>e2e_ms ≈ ttft_ms + c·(output_tokens − 1)</code>.
Intervals are {{.Level}} from Student's t. The same numbers are in <a href="fits.csv">fits.csv</a>.</p>
<table>
<tr>{{if .Compare}}<th class="l">folder</th>{{end}}<th class="l">sweep</th><th class="l">model</th><th class="l">result</th><th class="l">notes</th></tr>
{{range .Fits}}<tr>{{if $.Compare}}<td class="l">{{.Role}}</td>{{end}}<td class="l">{{.Sweep}}</td><td class="l"><code>{{.Equation}}</code></td><td class="l">{{if not .OK}}<span class="muted">{{.Result}}</span>{{else}}{{.Result}}{{end}}</td><td class="l warn">{{range $i, $w := .Warnings}}{{if $i}}; {{end}}{{$w}}{{end}}</td></tr>
{{end}}</table>

<h2 id="charts">Charts</h2>
{{range .Charts}}<figure id="chart-{{.Name}}">
<h3>{{.Title}}</h3>
{{.SVG}}
<figcaption>{{.Caption}} Files: <a href="{{.Name}}.png">{{.Name}}.png</a>, <a href="{{.Name}}.svg">{{.Name}}.svg</a>.</figcaption>
</figure>
{{end}}
{{if .Skipped}}<h3>Charts not drawn</h3>
<ul>{{range .Skipped}}<li>{{.Title}}: {{.Reason}}.</li>{{end}}</ul>
{{end}}
<h2 id="tpot">TPOT per event and per token</h2>
<table>
<tr>{{if .Compare}}<th class="l">folder</th>{{end}}<th class="l">config</th><th>per event</th><th>per token</th><th>event / token</th><th class="l"></th></tr>
{{range .TPOT}}<tr>{{if $.Compare}}<td class="l">{{.Role}}</td>{{end}}<td class="l">{{.Label}}</td><td>{{.Event}}</td><td>{{.Token}}</td><td>{{.Ratio}}</td><td class="l">{{if .Differs}}<span class="warn">differ</span>{{end}}{{if .Estimated}} per-token values estimated from (output tokens − 1){{end}}</td></tr>
{{end}}</table>

<h2 id="summary">Summary per config</h2>
{{range .Runs}}{{if $.Compare}}<h3>{{.Role}}: {{.Name}}</h3>{{end}}
<table>
<tr><th class="l">config</th><th>n</th><th>failed</th><th>TTFT median (ms)</th><th>TTFT median 95% CI</th><th>TPOT per token (ms)</th><th>TPOT per event (ms)</th><th>e2e median (ms)</th><th>output tokens</th></tr>
{{range .Rows}}<tr><td class="l">{{.Label}}</td><td>{{.N}}</td><td>{{.Failed}}</td><td>{{.TTFT}}</td><td>{{.TTFTCI}}</td><td>{{.TPOTToken}}</td><td>{{.TPOTEvent}}</td><td>{{.E2E}}</td><td>{{.Output}}</td></tr>
{{end}}</table>
{{end}}
</body>
</html>
{{define "load"}}<h2 id="load">Latency under load</h2>
<p>Each config with a load section is a load point: its measured requests, sent under one load. A closed loop keeps
its concurrency in flight; an open loop sends requests at a target rate. A series is the load points that differ
only in their level: the same server, the same kind of loop and the same values of every other axis. Percentiles
are over each load point's measured requests that succeeded; rates divide by its measured window, from the first
measured request's send to the last one's end.{{if .SLO}} A request is good when it succeeded and met every bound of
the objective: {{.SLO}}.{{end}}</p>
{{range .Charts}}<figure id="chart-{{.Name}}">
<h3>{{.Title}}</h3>
{{.SVG}}
<figcaption>{{.Caption}} Files: <a href="{{.Name}}.png">{{.Name}}.png</a>, <a href="{{.Name}}.svg">{{.Name}}.svg</a>.</figcaption>
</figure>
{{end}}{{if .Skipped}}<h3>Load charts not drawn</h3>
<ul>{{range .Skipped}}<li>{{.Title}}: {{.Reason}}.</li>{{end}}</ul>
{{end}}<h3 id="load-points">Load points</h3>
<table>
<tr>{{if .Compare}}<th class="l">folder</th>{{end}}<th class="l">series</th><th class="l">loop</th><th>level</th><th>n</th><th>failed</th><th>target (req/s)</th><th>achieved (req/s)</th><th>output tokens/s</th><th>TTFT p50 (ms)</th><th>TTFT p99 (ms)</th><th>TPOT per token p50 (ms)</th><th>TPOT per token p99 (ms)</th>{{if .SLO}}<th>goodput (req/s)</th><th>SLO met</th>{{end}}<th>send lag p99 (ms)</th><th>most in flight</th></tr>
{{range .Points}}<tr>{{if $.Compare}}<td class="l">{{.Role}}</td>{{end}}<td class="l">{{.Series}}</td><td class="l">{{.Loop}}</td><td>{{.Level}}</td><td>{{.N}}</td><td>{{.Failed}}</td><td>{{.Target}}</td><td>{{.Achieved}}</td><td>{{.Tokens}}</td><td>{{.TTFTP50}}</td><td>{{.TTFTP99}}</td><td>{{.TPOTP50}}</td><td>{{.TPOTP99}}</td>{{if $.SLO}}<td>{{.Goodput}}</td><td>{{.Attained}}</td>{{end}}<td>{{if .Late}}<span class="warn">{{.LagP99}} client late</span>{{else}}{{.LagP99}}{{end}}</td><td>{{.InFlight}}</td></tr>
{{end}}</table>
<p{{if .Late}} class="warn"{{end}}>The send lag is how late the client sent a request after the moment its load scheduled it:
the client's own lateness, not the server's.{{if .Late}} {{.Late}} of {{len .Points}} load points have a send lag p99 above
{{.LateLimit}}: the client fell behind, so the server saw less load than their level says; do not read their latencies as
the server's at that level.{{else}} Every load point's p99 is at most {{.LateLimit}}.{{end}}{{if .Thin}} A p99 marked × rests on
too few requests to be a tail: it lies between the two largest values.{{end}}</p>
{{end}}`))
