package report

import (
	"bytes"
	"fmt"
	"image/color"

	"github.com/onelayerdown/runner/runner/internal/chart"
)

// pngDPI is the resolution of the PNG files: sharp on a high-density screen and in print.
const pngDPI = 144

// inch is an inch in points, the unit of the charts' sizes.
const inch = 72.0

// figure is one chart of the report: drawn once per format from the same function.
type figure struct {
	Name    string // file stem: Name.png, Name.svg
	Title   string
	Caption string  // what the chart shows and how to read it
	W, H    float64 // points
	draw    func(c chart.Canvas)
}

// render draws a chart as PNG or SVG. The canvas is white to begin with, so that gaps between
// tiles and the area beside a legend are not transparent.
func render(c *figure, format string) ([]byte, error) {
	switch format {
	case "png":
		cv := chart.NewRaster(c.W, c.H, pngDPI)
		c.draw(cv)
		var buf bytes.Buffer
		if err := cv.WritePNG(&buf); err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.Name, err)
		}
		return buf.Bytes(), nil
	case "svg":
		// The clip paths' ids carry the chart's name: the page holds every chart inline.
		cv := chart.NewSVG(c.W, c.H, "plot-"+c.Name)
		cv.Fill(chart.RectPath(chart.Rect{Max: chart.Point{X: c.W, Y: c.H}}), color.White)
		c.draw(cv)
		return cv.Bytes(), nil
	}
	return nil, fmt.Errorf("chart %s: unknown format %q", c.Name, format)
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

// withAlpha returns c with opacity a (0–1).
func withAlpha(c color.RGBA, a float64) color.Color {
	return color.NRGBA{c.R, c.G, c.B, uint8(a*255 + 0.5)}
}

// oldDashes is the dash pattern of the older run in a comparison; the newer one is solid.
var oldDashes = []float64{5, 3}

// seriesDashes varies the dash pattern once the palette has been used up, so that series that
// share a colour still differ.
func seriesDashes(i int) []float64 {
	switch (i / len(palette)) % 3 {
	case 1:
		return []float64{1, 2}
	case 2:
		return []float64{6, 2, 1, 2}
	}
	return nil
}

// newPlot returns a plot with a title and axis labels; the chart package gives it the
// report's fonts and a light grid.
func newPlot(title, xLabel, yLabel string) *chart.Plot { return chart.New(title, xLabel, yLabel) }

// placeLegend draws legend l outside the data, so that it never hides any: in a column on the
// right when it is narrow, else in rows under the chart. It returns the area left for the
// plots, inside a small margin.
func placeLegend(c chart.Canvas, l *chart.Legend) chart.Rect {
	w, h := c.Size()
	return chart.PlaceLegend(c, chart.Rect{Max: chart.Point{X: w, Y: h}}, l)
}

// legendBeside draws p with legend l placed by placeLegend.
func legendBeside(c chart.Canvas, p *chart.Plot, l *chart.Legend) {
	p.Draw(c, placeLegend(c, l))
}

// trimNumber formats v with at most six decimals and no trailing zeros.
func trimNumber(v float64) string { return chart.FormatNumber(v) }

// line returns a plotted line through xys in colour col, width points wide.
func line(xys []chart.Point, col color.Color, width float64, dashes []float64) *chart.Line {
	return &chart.Line{XYs: xys, Style: chart.LineStyle{Color: col, Width: width, Dashes: dashes}}
}

// scatter returns markers of shape at xys in colour col, of radius points.
func scatter(xys []chart.Point, shape chart.Shape, col color.Color, radius float64) *chart.Scatter {
	return &chart.Scatter{XYs: xys, Marker: chart.Marker{Shape: shape, Radius: radius, Color: col}}
}
