package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// pngDPI is the resolution of the PNG files: sharp on a high-density screen and in print.
const pngDPI = 144

// chart is one figure of the report: drawn once per format from the same function.
type chart struct {
	Name    string // file stem: Name.png, Name.svg
	Title   string
	Caption string // what the chart shows and how to read it
	W, H    vg.Length
	draw    func(dc draw.Canvas)
}

// render draws a chart as PNG or SVG. The canvas is filled white first, so that gaps between
// tiles and the area beside a legend are not transparent.
func render(c *chart, format string) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case "png":
		cv := vgimg.NewWith(vgimg.UseWH(c.W, c.H), vgimg.UseDPI(pngDPI))
		paint(c, draw.New(cv))
		if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("chart %s: png: %w", c.Name, err)
		}
	case "svg":
		cv := vgsvg.New(c.W, c.H)
		paint(c, draw.New(cv))
		if _, err := cv.WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("chart %s: svg: %w", c.Name, err)
		}
	default:
		return nil, fmt.Errorf("chart %s: unknown format %q", c.Name, format)
	}
	return buf.Bytes(), nil
}

func paint(c *chart, dc draw.Canvas) {
	dc.SetColor(color.White)
	var r vg.Path
	r.Move(dc.Min)
	r.Line(vg.Point{X: dc.Max.X, Y: dc.Min.Y})
	r.Line(dc.Max)
	r.Line(vg.Point{X: dc.Min.X, Y: dc.Max.Y})
	r.Close()
	dc.Fill(r)
	c.draw(dc)
}

// palette is the Okabe–Ito set of colours, which stay distinct for the common forms of colour
// blindness; yellow is left out because it vanishes on white.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
}

func colorOf(i int) color.RGBA { return palette[i%len(palette)] }

// withAlpha returns c with opacity a (0–1), premultiplied as image/color expects.
func withAlpha(c color.RGBA, a float64) color.Color {
	m := func(v uint8) uint8 { return uint8(float64(v)*a + 0.5) }
	return color.RGBA{m(c.R), m(c.G), m(c.B), uint8(a*255 + 0.5)}
}

// oldDashes is the dash pattern of the older run in a comparison; the newer one is solid.
var oldDashes = []vg.Length{vg.Points(5), vg.Points(3)}

// seriesDashes varies the dash pattern once the palette has been used up, so that series that
// share a colour still differ.
func seriesDashes(i int) []vg.Length {
	switch (i / len(palette)) % 3 {
	case 1:
		return []vg.Length{vg.Points(1), vg.Points(2)}
	case 2:
		return []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}
	}
	return nil
}

// sans is the font of every text in the charts.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot with the report's fonts and a light grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
		a.Tick.Marker = cleanTicks{}
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe4}
	g.Horizontal.Color = color.Gray{Y: 0xe4}
	p.Add(g)
	return p
}

// newLegend returns an empty legend in the report's font.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 9)
	l.Left = true
	l.Top = true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(22)
	return l
}

// placeLegend draws legend l outside the data, so that it never hides any: in a column on the
// right when it is narrow, else in rows under the chart. It returns the canvas left for the
// plots, inside a small margin.
func placeLegend(dc draw.Canvas, l plot.Legend) draw.Canvas {
	dc = draw.Crop(dc, vg.Points(4), -vg.Points(10), vg.Points(4), -vg.Points(2))
	r := l.Rectangle(dc)
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	if w == 0 {
		return dc
	}
	width, height := dc.Max.X-dc.Min.X, dc.Max.Y-dc.Min.Y
	if w <= 0.3*width {
		l.Draw(draw.Crop(dc, width-w, 0, 0, -vg.Points(28)))
		return draw.Crop(dc, 0, -(w + vg.Points(14)), 0, 0)
	}
	l.Draw(draw.Crop(dc, vg.Points(40), 0, 0, -(height - h)))
	return draw.Crop(dc, 0, 0, h+vg.Points(10), 0)
}

// legendBeside draws p with legend l placed by placeLegend.
func legendBeside(dc draw.Canvas, p *plot.Plot, l plot.Legend) {
	p.Draw(placeLegend(dc, l))
}

// cleanTicks mark about six round values (steps of 1, 2, 2.5 or 5 times a power of ten), with
// labels that carry no trailing zeros ("250", not "250.00").
type cleanTicks struct{}

var _ plot.Ticker = cleanTicks{}

// Ticks returns the ticks between lo and hi.
func (cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for i := 0; ; i++ {
		v := (first + float64(i)) * step
		if v > hi+step*1e-9 {
			break
		}
		ts = append(ts, plot.Tick{Value: v, Label: trimNumber(v)})
	}
	return ts
}

// trimNumber formats v with at most six decimals and no trailing zeros.
func trimNumber(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// noData draws a message where a chart would be, for a panel that has nothing to show.
func noData(dc draw.Canvas, title, msg string) {
	p := newPlot(title, "", "")
	p.HideAxes()
	p.Draw(dc)
	sty := p.Title.TextStyle
	sty.Font = font.From(sans, 10)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: (dc.Min.Y + dc.Max.Y) / 2}, msg)
}
