package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

var keep = flag.String("out", "", "also write the test reports under this folder, to look at")

// outDir returns where a test writes its report: under -out when given, else a temporary
// folder.
func outDir(t *testing.T, name string) string {
	if *keep != "" {
		return filepath.Join(*keep, name)
	}
	return filepath.Join(t.TempDir(), name)
}

func load(t *testing.T, dirs ...string) []*Folder {
	t.Helper()
	var out []*Folder
	for _, d := range dirs {
		f, err := Read(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// checkPNG fails unless path is a PNG of a plausible size with a drawing on it: enough pixels
// that are neither white nor grey, and several colours.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	img, err := png.Decode(file)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 600 || b.Dy() < 400 {
		t.Errorf("%s: %d×%d pixels, want at least 600×400", path, b.Dx(), b.Dy())
	}
	colored, colors := 0, map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
			if max(r, g, bl)-min(r, g, bl) > 0x2000 {
				colored++
			}
		}
	}
	if colored < 200 || len(colors) < 8 {
		t.Errorf("%s: %d coloured pixels in %d colours: the chart looks empty", path, colored, len(colors))
	}
}

// checkSVG fails unless path is a well-formed XML document whose root is svg and that holds
// texts.
func checkSVG(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root, texts := "", 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "text" {
				texts++
			}
		}
	}
	if root != "svg" || texts < 5 {
		t.Errorf("%s: root <%s>, %d texts; want an svg with labelled axes", path, root, texts)
	}
	return b
}

// fitsRows reads fits.csv into maps from column name to cell.
func fitsRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	recs, err := csv.NewReader(file).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func cell(t *testing.T, row map[string]string, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[name], 64)
	if err != nil {
		t.Fatalf("fits.csv %s: %v", name, err)
	}
	return v
}

// checkReport checks what every report must hold: each chart drawn as a non-empty PNG and a
// well-formed SVG, an HTML page that shows each chart inline and links its files, that links
// fits.csv, and that loads nothing from elsewhere.
func checkReport(t *testing.T, res *Result, wantCharts []string) string {
	t.Helper()
	if strings.Join(res.Charts, " ") != strings.Join(wantCharts, " ") {
		t.Errorf("charts %q, want %q (skipped: %+v)", res.Charts, wantCharts, res.Skipped)
	}
	want := map[string]bool{IndexFile: true, "fits.csv": true}
	for _, c := range wantCharts {
		want[c+".png"], want[c+".svg"] = true, true
	}
	for _, f := range res.Files {
		if !want[f] {
			t.Errorf("unexpected file %s", f)
		}
		delete(want, f)
	}
	for f := range want {
		t.Errorf("%s was not written", f)
	}
	html, err := os.ReadFile(filepath.Join(res.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, c := range wantCharts {
		checkPNG(t, filepath.Join(res.Dir, c+".png"))
		checkSVG(t, filepath.Join(res.Dir, c+".svg"))
		for _, ref := range []string{`id="chart-` + c + `"`, `href="` + c + `.png"`, `href="` + c + `.svg"`} {
			if !strings.Contains(page, ref) {
				t.Errorf("%s does not reference chart %s (%s)", IndexFile, c, ref)
			}
		}
	}
	if n := strings.Count(page, "<svg"); n != len(wantCharts) {
		t.Errorf("%s holds %d inline svg elements, want %d", IndexFile, n, len(wantCharts))
	}
	if !strings.Contains(page, `href="fits.csv"`) {
		t.Errorf("%s does not link fits.csv", IndexFile)
	}
	for _, external := range []string{`src="http`, `href="http`, `url(http`, `<script`, `<link`, `@import`, `src="//`, `href="//`} {
		if strings.Contains(page, external) {
			t.Errorf("%s loads something from elsewhere: %s", IndexFile, external)
		}
	}
	return page
}

// untimedCharts returns the charts of a folder whose server did not time its requests: every
// chart but the server-phase one.
func untimedCharts() []string {
	var out []string
	for _, c := range ChartNames() {
		if c != serverPhasesChartName {
			out = append(out, c)
		}
	}
	return out
}

// untimedSkips fails unless skips hold the server-phase chart, left out for want of server
// timings, and returns the other skips.
func untimedSkips(t *testing.T, skips []Skip) []Skip {
	t.Helper()
	var out []Skip
	found := false
	for _, s := range skips {
		if s.Chart == serverPhasesChartName {
			found = strings.Contains(s.Reason, "no measured request has server-side timings")
			continue
		}
		out = append(out, s)
	}
	if !found {
		t.Errorf("skipped %+v: the server-phase chart is not left out for want of server timings", skips)
	}
	return out
}

func TestReportOneFolder(t *testing.T) {
	out := outDir(t, "one")
	res, err := Write(out, load(t, filepath.Join("testdata", "new"))...)
	if err != nil {
		t.Fatal(err)
	}
	page := checkReport(t, res, untimedCharts())
	untimedSkips(t, res.Skipped)
	for _, w := range []string{"runner report: report-fixture", "vllm 0.6.3", "36 measured requests (1 failed)",
		"prompt_tokens=512,max_tokens=64", "per-request rows"} {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", IndexFile, w)
		}
	}
	rows := fitsRows(t, filepath.Join(out, "fits.csv"))
	if len(rows) != 1 || rows[0]["folder"] != "new" || rows[0]["sweep"] != "all configs" || rows[0]["rows"] != "per_request" {
		t.Fatalf("fits.csv rows %v, want one for the sweep of folder new", rows)
	}
	// The folder's requests were drawn from a known model; the fits must find it, from the 35
	// measured requests that succeeded (first, warm-up and failed rows are left out).
	checkRecovers(t, rows[0], fixtureModels[1])
	r := rows[0]
	if n := cell(t, r, "prefill_n"); n != 35 {
		t.Errorf("prefill_n %g, want 35 (36 measured requests, one failed)", n)
	}
	if r2 := cell(t, r, "prefill_r2"); r2 < 0.9 {
		t.Errorf("prefill R² %g, want a good line", r2)
	}
}

func TestReportCompare(t *testing.T) {
	out := outDir(t, "compare")
	res, err := Write(out, load(t, filepath.Join("testdata", "old"), filepath.Join("testdata", "new"))...)
	if err != nil {
		t.Fatal(err)
	}
	page := checkReport(t, res, untimedCharts())
	untimedSkips(t, res.Skipped)
	for _, w := range []string{"old: old", "new: new", "vllm 0.6.1", "vllm 0.6.3"} {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", IndexFile, w)
		}
	}
	// Every chart overlays the two folders: its legend or its caption names both.
	for _, c := range res.Charts {
		svg := string(checkSVG(t, filepath.Join(out, c+".svg")))
		// Charts that colour by run name each folder once; the others mark every entry.
		old, new := "(old)", "(new)"
		if c == "ttft_distribution" || c == "itl_distribution" {
			old, new = "old: old", "new: new"
		}
		if !strings.Contains(svg, old) || !strings.Contains(svg, new) {
			t.Errorf("%s.svg does not show both folders (no %q and %q)", c, old, new)
		}
	}
	rows := fitsRows(t, filepath.Join(out, "fits.csv"))
	if len(rows) != 2 || rows[0]["folder"] != "old" || rows[1]["folder"] != "new" {
		t.Fatalf("fits.csv rows %v, want old then new", rows)
	}
	for i, m := range fixtureModels {
		checkRecovers(t, rows[i], m)
	}
}

// TestReportDeterministic writes the report of the same two folders twice and wants every
// file the same, byte for byte: a chart drawn from the same data must not change, so that a
// report can be compared with an earlier one and kept under version control.
func TestReportDeterministic(t *testing.T) {
	dirs := []string{filepath.Join("testdata", "old"), filepath.Join("testdata", "new")}
	outs := [2]string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	var files [2][]string
	for i, out := range outs {
		res, err := Write(out, load(t, dirs...)...)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = res.Files
	}
	if strings.Join(files[0], " ") != strings.Join(files[1], " ") {
		t.Fatalf("the two reports wrote %q and %q", files[0], files[1])
	}
	for _, f := range files[0] {
		a, err := os.ReadFile(filepath.Join(outs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(outs[1], f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two reports of the same folders", f)
		}
	}
}

// checkRecovers fails unless the fits.csv row found the coefficients of model m: each within
// four of its standard errors of the truth (a miss with less than one chance in ten thousand
// for a correct fit), plus, for a, the half millisecond by which the model's occasional
// scheduling delays raise the mean TTFT.
func checkRecovers(t *testing.T, row map[string]string, m fixtureModel) {
	t.Helper()
	for _, c := range []struct {
		est, se    string
		want, bias float64
	}{
		{"a_ms", "a_se_ms", m.A, 0.5},
		{"b_ms_per_token", "b_se_ms_per_token", m.B, 0},
		{"c_ms_per_token", "c_se_ms_per_token", m.WantC(), 0},
	} {
		got, se := cell(t, row, c.est), cell(t, row, c.se)
		if se <= 0 || math.Abs(got-c.want) > 4*se+c.bias {
			t.Errorf("%s: %s = %g (standard error %g), want %g", m.dir, c.est, got, se, c.want)
		}
	}
}

func TestReportSkipsWhatTheDataCannotShow(t *testing.T) {
	out := outDir(t, "skips")
	if _, err := Write(out, load(t, filepath.Join("testdata", "new"))...); err != nil {
		t.Fatal(err)
	}
	// A decode sweep at one prompt length, from a server that does not say what each event
	// carried: no prefill chart and no prefill fit, and the timeline counts text bytes.
	m := resultstest.Sweep{EngineVersion: "0.6.3", Prompts: []int{128}, Outputs: []int{16, 32, 64},
		A: 20, B: 0.05, C0: 9, CP: 0.002, Chunk: []float64{0.6, 0.4}, NoEventTokens: true, Seed: 5}
	dir := m.Write(t, t.TempDir())
	res, err := Write(out, load(t, dir)...)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range untimedCharts() {
		if c != "ttft_vs_prompt_tokens" {
			want = append(want, c)
		}
	}
	page := checkReport(t, res, want)
	if skipped := untimedSkips(t, res.Skipped); len(skipped) != 1 || skipped[0].Chart != "ttft_vs_prompt_tokens" ||
		!strings.Contains(skipped[0].Reason, "do not vary the prompt length") {
		t.Errorf("skipped %+v, want the prefill chart for want of prompt lengths", skipped)
	}
	if _, err := os.Stat(filepath.Join(out, "ttft_vs_prompt_tokens.png")); !os.IsNotExist(err) {
		t.Errorf("the earlier report's prefill chart is still there (%v)", err)
	}
	for _, w := range []string{"Charts not drawn", "TTFT against prompt tokens: the configs do not vary the prompt length",
		"not fitted: one prompt length (128 tokens)", "the stems show text bytes instead",
		"per-token values estimated from (output tokens − 1)"} {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", IndexFile, w)
		}
	}
	row := fitsRows(t, filepath.Join(out, "fits.csv"))[0]
	if row["a_ms"] != "" || row["c_ms_per_token"] == "" || !strings.Contains(row["prefill_notes"], "one prompt length") {
		t.Errorf("fits.csv: a %q, c %q, prefill notes %q", row["a_ms"], row["c_ms_per_token"], row["prefill_notes"])
	}
}

func TestWriteAndLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"no folder", func() error { _, err := Write(t.TempDir()); return err }, "want one or two result folders, got 0"},
		{"three folders", func() error {
			f := load(t, filepath.Join("testdata", "new"))[0]
			_, err := Write(t.TempDir(), f, f, f)
			return err
		}, "want one or two result folders, got 3"},
		{"not a result folder", func() error { _, err := Read(t.TempDir()); return err }, "not a result folder"},
		{"output is a file", func() error {
			file := filepath.Join(t.TempDir(), "file")
			os.WriteFile(file, nil, 0o644)
			_, err := Write(file, load(t, filepath.Join("testdata", "new"))...)
			return err
		}, "mkdir "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	f, err := Read(filepath.Join("testdata", "new"))
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	for b.Loop() {
		if _, err := Write(out, f); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReportWithoutEvents(t *testing.T) {
	// A folder whose events.csv holds no rows: the per-request metrics are there, the events
	// are not, so the two event charts are left out and the rest are drawn.
	f := load(t, filepath.Join("testdata", "new"))[0]
	for i := range f.Requests {
		f.Requests[i].EventList = nil
	}
	res, err := Write(outDir(t, "no-events"), f)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range untimedCharts() {
		if c != "itl_distribution" && c != "request_timeline" {
			want = append(want, c)
		}
	}
	checkReport(t, res, want)
	if skipped := untimedSkips(t, res.Skipped); len(skipped) != 2 || !strings.Contains(skipped[0].Reason, "two text events") ||
		!strings.Contains(skipped[1].Reason, "events recorded") {
		t.Errorf("skipped %+v", skipped)
	}
}
