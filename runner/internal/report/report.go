// Package report writes a self-contained report of one result folder, or of two compared: an
// HTML page that opens offline (every chart inline as SVG, no external asset), each chart also
// as PNG and SVG files for papers and pull requests, and fits.csv with the prefill/decode
// decomposition. The charts are drawn with the chart package. A folder whose configs are load
// points also gets latency against concurrency or rate, throughput against TTFT and a table of
// its load points; a folder without one gets exactly the page it got before loads existed.
//
// Every chart uses the measured, successful requests of each config: warm-up requests, the
// first request after a boot and failed requests are left out, as in the summary.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/onelayerdown/runner/runner/internal/decompose"
)

// IndexFile is the name of the report's HTML page.
const IndexFile = "index.html"

// chartKind is one chart the report can draw: a builder that returns the chart, or a reason
// why the folders cannot support it.
type chartKind struct {
	name  string
	title string
	build func(runs []*run) (*figure, string)
}

// chartKinds lists the charts in the order the page shows them.
var chartKinds = []chartKind{
	{"ttft_vs_prompt_tokens", "TTFT against prompt tokens", ttftChart},
	{"tpot_vs_output_tokens", "TPOT against output tokens", tpotChart},
	{"decomposition", "Prefill/decode decomposition", decompositionChart},
	{"ttft_distribution", "TTFT distribution", ttftBoxChart},
	{"itl_distribution", "Gaps between events", gapCDFChart},
	{"request_timeline", "Timeline of one request", timelineChart},
	{"tpot_event_vs_token", "TPOT per event and per token", tpotCompareChart},
	{serverPhasesChartName, "Server-side phases per request", serverPhasesChart},
}

// gpuKind is the chart of a run that sampled a GPU, shown after the others; a run without GPU
// samples neither draws it nor lists it as skipped, so its page is the one it got before GPUs
// were sampled.
var gpuKind = chartKind{"gpu_telemetry", "GPU clock and temperature", gpuChart}

// ChartNames returns the file stems of every chart the report can draw, in page order.
func ChartNames() []string {
	out := make([]string, len(chartKinds))
	for i, k := range chartKinds {
		out[i] = k.name
	}
	return out
}

// Skip is a chart that the report left out, and why.
type Skip struct {
	Chart  string
	Reason string
}

// Result says what Write wrote.
type Result struct {
	Dir     string   // the output folder
	Files   []string // the files written, relative to Dir, sorted
	Charts  []string // the charts drawn, in page order
	Skipped []Skip   // the charts left out
}

// Write writes the report of one folder, or of two (old first, new second) overlaid, to the
// folder out, creating it if needed: index.html, NAME.png and NAME.svg per chart, and fits.csv.
// Chart files of an earlier report that this one does not draw are removed, so that the folder
// never holds a chart of other data.
func Write(out string, folders ...*Folder) (*Result, error) {
	var runs []*run
	switch len(folders) {
	case 1:
		runs = []*run{newRun("", folders[0])}
	case 2:
		runs = []*run{newRun("old", folders[0]), newRun("new", folders[1])}
	default:
		return nil, fmt.Errorf("want one or two result folders, got %d", len(folders))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	w := &writer{out: out, runs: runs, res: &Result{Dir: out}}
	pg := newPage(runs)
	// The load charts come first, as the page shows them; those the runs do not call for
	// are removed, so that the folder never holds a chart of other data.
	loadKinds := loadChartKinds(runs)
	drawn := map[string]bool{}
	for _, k := range loadKinds {
		drawn[k.name] = true
	}
	for _, name := range loadChartNames {
		if !drawn[name] {
			if err := w.removeCharts(name); err != nil {
				return nil, err
			}
		}
	}
	if pg.Load != nil {
		var err error
		if pg.Load.Charts, pg.Load.Skipped, err = w.drawAll(loadKinds); err != nil {
			return nil, err
		}
	}
	var err error
	if pg.Charts, pg.Skipped, err = w.drawAll(chartKinds); err != nil {
		return nil, err
	}
	gpu, _, err := w.drawAll([]chartKind{gpuKind})
	if err != nil {
		return nil, err
	}
	pg.Charts = append(pg.Charts, gpu...)

	var buf bytes.Buffer
	if err := decompose.WriteCSV(&buf, decompositionSets(runs)...); err != nil {
		return nil, err
	}
	if err := w.write(decompose.CSVFile, buf.Bytes()); err != nil {
		return nil, err
	}

	buf.Reset()
	if err := pageTemplate.Execute(&buf, pg); err != nil {
		return nil, fmt.Errorf("%s: %w", IndexFile, err)
	}
	if err := w.write(IndexFile, buf.Bytes()); err != nil {
		return nil, err
	}
	res := w.res
	sort.Strings(res.Files)
	return res, nil
}

// writer writes the files of one report into its folder out and records them in res.
type writer struct {
	out  string
	runs []*run
	res  *Result
}

// write writes the file name of the report.
func (w *writer) write(name string, b []byte) error {
	if err := os.WriteFile(filepath.Join(w.out, name), b, 0o644); err != nil {
		return err
	}
	w.res.Files = append(w.res.Files, name)
	return nil
}

// removeCharts removes the files of the chart name that an earlier report left, if any.
func (w *writer) removeCharts(name string) error {
	for _, ext := range []string{".png", ".svg"} {
		if err := os.Remove(filepath.Join(w.out, name+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// drawAll draws kinds in order, writing each chart's files and returning what the page shows
// of them; a chart the runs cannot support is recorded as skipped.
func (w *writer) drawAll(kinds []chartKind) ([]chartView, []skipView, error) {
	var views []chartView
	var skips []skipView
	for _, k := range kinds {
		c, why := k.build(w.runs)
		if c == nil && why == "" {
			// A chart of something the runs never had (GPU telemetry on a CPU run): not
			// drawn, and not worth a line on the page either.
			if err := w.removeCharts(k.name); err != nil {
				return nil, nil, err
			}
			continue
		}
		if c == nil {
			w.res.Skipped = append(w.res.Skipped, Skip{Chart: k.name, Reason: why})
			skips = append(skips, skipView{Title: k.title, Reason: why})
			if err := w.removeCharts(k.name); err != nil {
				return nil, nil, err
			}
			continue
		}
		svg, err := w.drawChart(c)
		if err != nil {
			return nil, nil, err
		}
		w.res.Charts = append(w.res.Charts, c.Name)
		views = append(views, chartView{Name: c.Name, Title: c.Title, Caption: c.Caption, SVG: inlineSVG(svg)})
	}
	return views, skips, nil
}

// drawChart writes chart c as PNG and SVG and returns the SVG, which the page inlines.
func (w *writer) drawChart(c *figure) ([]byte, error) {
	var svg []byte
	for _, format := range []string{"png", "svg"} {
		b, err := render(c, format)
		if err != nil {
			return nil, err
		}
		if err := w.write(c.Name+"."+format, b); err != nil {
			return nil, err
		}
		if format == "svg" {
			svg = b
		}
	}
	return svg, nil
}

// decompositionSets are the sweeps of the runs as decompose.WriteCSV takes them, each named
// by its folder, and by its role as well when both folders have the same name.
func decompositionSets(runs []*run) []decompose.Set {
	var sets []decompose.Set
	for _, r := range runs {
		name := r.f.Name()
		if len(runs) > 1 && runs[0].f.Name() == runs[1].f.Name() {
			name = r.role + "/" + name
		}
		sets = append(sets, decompose.Set{Folder: name, Sweeps: r.sweeps})
	}
	return sets
}
