package chart

import (
	"bytes"
	"encoding/xml"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/small.svg from the code")

var (
	blue   = color.RGBA{0x00, 0x72, 0xB2, 0xff}
	orange = color.RGBA{0xD5, 0x5E, 0x00, 0xff}
)

// smallChart draws a small chart with every kind of item, a legend and text that XML must
// escape.
func smallChart(c Canvas) {
	w, h := c.Size()
	leg := &Legend{}
	p := New("Tom & Jerry's <chart>", "x \"quoted\"", "y (ms)")
	p.Y.Min = 0
	band := &Polygon{XYs: []Point{{1, 2}, {2, 4}, {3, 5}, {3, 3}, {2, 2}, {1, 1}}, Fill: color.NRGBA{0x00, 0x72, 0xB2, 0x33}}
	ln := &Line{XYs: []Point{{1, 1.5}, {2, 3}, {3, 4}}, Style: LineStyle{Color: blue, Width: 1.6}}
	pts := &Scatter{XYs: []Point{{1, 1.5}, {2, 3}, {3, 4}}, Marker: Marker{Shape: Dot, Radius: 2.4, Color: blue}}
	step := &Line{XYs: []Point{{1, 0.5}, {1.5, 1}, {2.5, 2}, {math.NaN(), math.NaN()}, {2.6, 0.2}, {3, 0.4}},
		Style: LineStyle{Color: orange, Width: 1, Dashes: []float64{4, 2}}, Step: true}
	ring := &Scatter{XYs: []Point{{2.5, 4.5}}, Marker: Marker{Shape: Ring, Radius: 3, Color: orange}}
	cross := &Scatter{XYs: []Point{{1.5, 4}}, Marker: Marker{Shape: Cross, Radius: 3, Color: orange}}
	bars := Boxes{{X0: 1.2, X1: 1.4, Y0: 0, Y1: 0.8, Fill: orange, Line: LineStyle{Color: blue, Width: 0.5}}}
	fit := &Function{F: func(x float64) float64 { return x + 10 }, XMin: 1, XMax: 3, Style: LineStyle{Color: color.Gray{Y: 0x20}, Width: 1}}
	labels := &Labels{XYs: []Point{{3, 4}}, Texts: []string{"8/s"}, Offset: Point{4, -3}, Style: TextStyle{Size: 9}}
	p.Add(band, ln, pts, step, ring, cross, bars, fit, labels)
	leg.Add("median & band", ln, pts)
	leg.Add("steps", step)
	leg.Add("bars", bars)
	area := PlaceLegend(c, Rect{Max: Point{w, h}}, leg)
	p.Draw(c, area)
}

func renderSVG(t *testing.T) []byte {
	t.Helper()
	s := NewSVG(360, 220, "small")
	smallChart(s)
	return s.Bytes()
}

func renderPNG(t *testing.T) []byte {
	t.Helper()
	r := NewRaster(360, 220, 144)
	smallChart(r)
	var buf bytes.Buffer
	if err := r.WritePNG(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEscapeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            "plain",
		"a & b":            "a &amp; b",
		"<svg>":            "&lt;svg&gt;",
		`say "hi" it's`:    "say &quot;hi&quot; it&apos;s",
		"e2e − TTFT ≈ c·n": "e2e − TTFT ≈ c·n",
		"&amp;":            "&amp;amp;",
	} {
		if got := EscapeText(in); got != want {
			t.Errorf("EscapeText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSVGWellFormed parses the small chart as XML: a standalone svg root with its namespace,
// size and view box, and every text as written, escapes undone.
func TestSVGWellFormed(t *testing.T) {
	b := renderSVG(t)
	d := xml.NewDecoder(bytes.NewReader(b))
	var root *xml.StartElement
	var texts []string
	inText := false
	depth, clips := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg does not parse: %v\n%s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			if root == nil {
				el := e.Copy()
				root = &el
			}
			switch e.Name.Local {
			case "text":
				inText = true
				texts = append(texts, "")
			case "clipPath":
				clips++
			}
		case xml.EndElement:
			depth--
			inText = false
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(e)
			}
		}
	}
	if depth != 0 {
		t.Errorf("%d elements left open", depth)
	}
	if root == nil || root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element %v, want svg in the SVG namespace", root)
	}
	attrs := map[string]string{}
	for _, a := range root.Attr {
		attrs[a.Name.Local] = a.Value
	}
	for k, want := range map[string]string{"width": "360pt", "height": "220pt", "viewBox": "0 0 360 220", "font-family": FontFamily} {
		if attrs[k] != want {
			t.Errorf("svg %s = %q, want %q", k, attrs[k], want)
		}
	}
	if clips != 1 {
		t.Errorf("%d clip paths, want 1 (the data area)", clips)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"Tom & Jerry's <chart>", `x "quoted"`, "y (ms)", "median & band", "8/s"} {
		if !strings.Contains(all, want) {
			t.Errorf("no text %q in the svg; texts: %s", want, all)
		}
	}
}

// TestSVGGolden compares the small chart with testdata/small.svg; -update rewrites it.
func TestSVGGolden(t *testing.T) {
	b := renderSVG(t)
	path := filepath.Join("testdata", "small.svg")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("the small chart's svg differs from %s (go test -update rewrites it after a deliberate change):\n%s", path, b)
	}
}

func TestDeterministic(t *testing.T) {
	if a, b := renderSVG(t), renderSVG(t); !bytes.Equal(a, b) {
		t.Error("two svg renderings of the same chart differ")
	}
	if a, b := renderPNG(t), renderPNG(t); !bytes.Equal(a, b) {
		t.Error("two png renderings of the same chart differ")
	}
}

func TestPNGSize(t *testing.T) {
	for _, tc := range []struct {
		w, h, dpi float64
		px, py    int
	}{
		{360, 220, 144, 720, 440},
		{540, 331.2, 144, 1080, 662},
		{720, 316.8, 144, 1440, 634},
		{100, 50, 72, 100, 50},
	} {
		r := NewRaster(tc.w, tc.h, tc.dpi)
		smallChart(r)
		var buf bytes.Buffer
		if err := r.WritePNG(&buf); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatalf("%g×%g pt: the png does not decode: %v", tc.w, tc.h, err)
		}
		if b := img.Bounds(); b.Dx() != tc.px || b.Dy() != tc.py {
			t.Errorf("%g×%g pt at %g dpi: %d×%d pixels, want %d×%d", tc.w, tc.h, tc.dpi, b.Dx(), b.Dy(), tc.px, tc.py)
		}
	}
}

func rgba(img image.Image, x, y int) color.RGBA {
	return color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
}

// TestFillRect fills a rectangle on whole pixels: inside it every pixel is the fill colour,
// outside it every pixel is still white.
func TestFillRect(t *testing.T) {
	r := NewRaster(50, 40, 144) // 100 × 80 pixels
	r.Fill(RectPath(Rect{Point{10, 10}, Point{30, 25}}), orange)
	img := r.Image()
	for y := range 80 {
		for x := range 100 {
			in := x >= 20 && x < 60 && y >= 20 && y < 50
			want := color.RGBA{0xff, 0xff, 0xff, 0xff}
			if in {
				want = orange
			}
			if got := rgba(img, x, y); got != want {
				t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

// TestFillClip fills a rectangle that reaches past a clip on every side: only the clip is
// painted, and nothing spills into the rows or columns beyond it.
func TestFillClip(t *testing.T) {
	r := NewRaster(50, 40, 144)
	r.PushClip(Rect{Point{10, 10}, Point{30, 25}})
	r.Fill(RectPath(Rect{Point{-5, 0}, Point{45, 35}}), blue)
	r.PopClip()
	r.Fill(RectPath(Rect{Point{40, 30}, Point{45, 35}}), orange) // after the clip: unclipped
	img := r.Image()
	for y := range 80 {
		for x := range 100 {
			want := color.RGBA{0xff, 0xff, 0xff, 0xff}
			switch {
			case x >= 20 && x < 60 && y >= 20 && y < 50:
				want = blue
			case x >= 80 && x < 90 && y >= 60 && y < 70:
				want = orange
			}
			if got := rgba(img, x, y); got != want {
				t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

// TestStrokeOverlap strokes a line that doubles back on itself: where its two segments overlap
// the line must be as solid as anywhere, not cancelled out by the rasterizer's winding.
func TestStrokeOverlap(t *testing.T) {
	r := NewRaster(50, 40, 144)
	var p Path
	p.MoveTo(5, 20)
	p.LineTo(45, 20)
	p.LineTo(5, 21)
	r.Stroke(&p, LineStyle{Color: blue, Width: 4})
	img := r.Image()
	for _, x := range []int{20, 50, 80} {
		if got := rgba(img, x, 41); got != blue {
			t.Errorf("pixel (%d, 41), where both segments pass, = %v, want %v", x, got, blue)
		}
	}
	if got := rgba(img, 50, 10); got != (color.RGBA{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("pixel (50, 10), away from the line, = %v, want white", got)
	}
}

func TestDash(t *testing.T) {
	// A line 20 long round a corner, dashes of 5 drawn and 3 skipped.
	line := []Point{{0, 0}, {10, 0}, {10, 10}}
	got := dash(line, []float64{5, 3})
	want := [][]Point{
		{{0, 0}, {5, 0}},
		{{8, 0}, {10, 0}, {10, 3}},
		{{10, 6}, {10, 10}},
	}
	if len(got) != len(want) {
		t.Fatalf("dash gives %d pieces %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("piece %d = %v, want %v", i, got[i], want[i])
		}
		for j := range want[i] {
			if math.Hypot(got[i][j].X-want[i][j].X, got[i][j].Y-want[i][j].Y) > 1e-9 {
				t.Errorf("piece %d point %d = %v, want %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestRasterText checks that text lands where it is anchored, and that a vertical text stands
// upright: taller than it is wide.
func TestRasterText(t *testing.T) {
	ink := func(img *image.RGBA) image.Rectangle {
		var b image.Rectangle
		for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
			for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
				if rgba(img, x, y).R < 0x80 {
					b = b.Union(image.Rect(x, y, x+1, y+1))
				}
			}
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		style TextStyle
		check func(b image.Rectangle) bool
	}{
		{"start", TextStyle{Size: 10}, func(b image.Rectangle) bool { return b.Min.X >= 100 && b.Min.X < 104 && b.Dx() > 3*b.Dy() }},
		{"end", TextStyle{Size: 10, Anchor: End}, func(b image.Rectangle) bool { return b.Max.X <= 100 && b.Max.X > 96 }},
		// The baseline runs through the anchor: capitals rise about 14 pixels above it, the
		// descenders of y and the brackets fall about 5 below.
		{"middle", TextStyle{Size: 10, Anchor: Middle}, func(b image.Rectangle) bool {
			return math.Abs(float64(b.Min.X+b.Max.X)/2-100) < 2 && b.Min.Y < 88 && b.Max.Y > 101 && b.Max.Y <= 106
		}},
		// Turned a quarter counter-clockwise, the tops of the letters face left.
		{"vertical", TextStyle{Size: 10, Vertical: true, Anchor: Middle}, func(b image.Rectangle) bool {
			return b.Dy() > 3*b.Dx() && math.Abs(float64(b.Min.Y+b.Max.Y)/2-100) < 2 && b.Min.X < 88 && b.Max.X > 101 && b.Max.X <= 106
		}},
	} {
		r := NewRaster(100, 100, 144)
		r.Text(Point{50, 50}, "latency (ms)", tc.style)
		if b := ink(r.Image()); b.Empty() || !tc.check(b) {
			t.Errorf("%s: text inked %v, anchored at (100, 100) pixels", tc.name, b)
		}
	}
}

func TestTextWidth(t *testing.T) {
	s := NewSVG(10, 10, "w")
	if got := s.TextWidth("0", 10); math.Abs(got-5.56) > 1e-9 {
		t.Errorf("svg width of a digit at 10 pt = %g, want 5.56", got)
	}
	if got := s.TextWidth("Wi", 10); math.Abs(got-(9.44+2.22)) > 1e-9 {
		t.Errorf("svg width of Wi at 10 pt = %g, want 11.66", got)
	}
	for i, a := range asciiAdvance {
		if a == 0 {
			t.Errorf("no advance width for %q", rune(' '+i))
		}
	}
	r := NewRaster(10, 10, 144)
	one, two := r.TextWidth("concurrency", 9), r.TextWidth("concurrency concurrency", 9)
	if !(one > 20 && one < 80) || math.Abs(two-(2*one+r.TextWidth(" ", 9))) > 0.5 {
		t.Errorf("png widths: %g for one word, %g for two; want a plausible width that adds up", one, two)
	}
}

func TestAxisTransform(t *testing.T) {
	p := New("", "", "")
	p.X.Log = true
	p.Add(&Line{XYs: []Point{{1, 0}, {100, 10}}})
	p.X.settle()
	p.Y.settle()
	tr := Transform{Data: Rect{Point{10, 20}, Point{110, 220}}, x: &p.X, y: &p.Y}
	for _, tc := range []struct{ got, want float64 }{
		{tr.X(1), 10}, {tr.X(10), 60}, {tr.X(100), 110}, {tr.Y(0), 220}, {tr.Y(10), 20}, {tr.Y(5), 120},
	} {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("transform gives %g, want %g", tc.got, tc.want)
		}
	}
}

// TestAddRange checks how items widen the axes: a minimum set before adding stays when the
// data lie above it, a function does not widen them, and a log axis ignores values ≤ 0.
func TestAddRange(t *testing.T) {
	p := New("", "", "")
	p.Y.Min = 0
	p.Add(&Scatter{XYs: []Point{{2, 5}, {4, 9}}})
	p.Add(&Function{F: func(x float64) float64 { return 100 * x }, XMin: -10, XMax: 10})
	if p.X.Min != 2 || p.X.Max != 4 || p.Y.Min != 0 || p.Y.Max != 9 {
		t.Errorf("axes [%g, %g] × [%g, %g], want [2, 4] × [0, 9]", p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
	}
	q := New("", "", "")
	q.X.Log = true
	q.Add(&Line{XYs: []Point{{4, 2}, {16, 3}}})
	q.Add(&Scatter{XYs: []Point{{0, 1}, {32, 3}}})
	if q.X.Min != 4 || q.X.Max != 32 {
		t.Errorf("log axis [%g, %g], want [4, 32]", q.X.Min, q.X.Max)
	}
}

// TestPlaceLegend checks that a narrow legend goes beside the plots and a wide one under them.
func TestPlaceLegend(t *testing.T) {
	s := NewSVG(500, 300, "leg")
	narrow := &Legend{}
	narrow.Add("p50", LineThumb{Color: blue, Width: 1})
	r := PlaceLegend(s, Rect{Max: Point{500, 300}}, narrow)
	if !(r.Max.X < 460) || r.Max.Y != 296 {
		t.Errorf("with a narrow legend the plots get %v, want the width cut and the full height", r)
	}
	wide := &Legend{}
	wide.Add(strings.Repeat("a long label ", 20), LineThumb{Color: blue, Width: 1})
	wide.Add("two", LineThumb{Color: blue, Width: 1})
	r = PlaceLegend(s, Rect{Max: Point{500, 300}}, wide)
	if r.Max.X != 490 || !(r.Max.Y < 280) {
		t.Errorf("with a wide legend the plots get %v, want the full width and the height cut", r)
	}
}

// TestDrawGridAligns checks that plots in a column share the left edge of their data areas,
// though their tick labels differ in width.
func TestDrawGridAligns(t *testing.T) {
	s := NewSVG(400, 400, "grid")
	top, bottom := New("", "", "a"), New("", "", "b")
	top.Add(&Line{XYs: []Point{{0, 0}, {1, 1000000}}})
	bottom.Add(&Line{XYs: []Point{{0, 0}, {1, 1}}})
	var got [2]float64
	top.Add(&Custom{XMin: math.NaN(), XMax: math.NaN(), YMin: math.NaN(), YMax: math.NaN(), Fn: func(c Canvas, t Transform) { got[0] = t.Data.Min.X }})
	bottom.Add(&Custom{XMin: math.NaN(), XMax: math.NaN(), YMin: math.NaN(), YMax: math.NaN(), Fn: func(c Canvas, t Transform) { got[1] = t.Data.Min.X }})
	DrawGrid(s, [][]*Plot{{top}, {bottom}}, Rect{Max: Point{400, 400}}, Grid{PadY: 6})
	if got[0] == 0 || got[0] != got[1] {
		t.Errorf("data areas start at x = %g and %g, want the same, past the tick labels", got[0], got[1])
	}
}

// TestMessagePlot checks that a plot with a message draws its title and the message, and no
// axes.
func TestMessagePlot(t *testing.T) {
	s := NewSVG(300, 200, "msg")
	p := New("Prefill", "prompt tokens", "TTFT (ms)")
	p.Message = "no requests to fit"
	p.Draw(s, Rect{Max: Point{300, 200}})
	out := string(s.Bytes())
	if strings.Count(out, "<text") != 2 || !strings.Contains(out, ">Prefill<") || !strings.Contains(out, ">no requests to fit<") {
		t.Errorf("want the title and the message only:\n%s", out)
	}
	if strings.Contains(out, "<path") || strings.Contains(out, "prompt tokens") {
		t.Errorf("a plot with a message drew axes:\n%s", out)
	}
}
