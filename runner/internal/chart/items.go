package chart

import (
	"image/color"
	"math"
)

// Shape is the form of a marker.
type Shape int

// The marker shapes.
const (
	Dot   Shape = iota // a filled circle
	Ring               // a circle's outline
	Cross              // a diagonal cross, ×
)

// Marker is the glyph drawn at a point: a shape of Radius points in Color.
type Marker struct {
	Shape  Shape
	Radius float64
	Color  color.Color
}

// Draw draws the marker centred on at.
func (m Marker) Draw(c Canvas, at Point) {
	switch m.Shape {
	case Ring:
		c.Circle(at, m.Radius, nil, LineStyle{Color: m.Color, Width: 0.75})
	case Cross:
		d := m.Radius * 0.8
		var p Path
		p.MoveTo(at.X-d, at.Y-d)
		p.LineTo(at.X+d, at.Y+d)
		p.MoveTo(at.X-d, at.Y+d)
		p.LineTo(at.X+d, at.Y-d)
		c.Stroke(&p, LineStyle{Color: m.Color, Width: 1})
	default:
		c.Circle(at, m.Radius, m.Color, LineStyle{})
	}
}

// dataRange returns the extent of the finite points of xys, NaN where there is none.
func dataRange(xys []Point) (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range xys {
		if finite(p.X) {
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
		}
		if finite(p.Y) {
			ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
		}
	}
	nan := func(v float64) float64 {
		if math.IsInf(v, 0) {
			return math.NaN()
		}
		return v
	}
	return nan(xmin), nan(xmax), nan(ymin), nan(ymax)
}

// Line joins data points with straight lines; a point with a NaN coordinate breaks the line.
// A Step line runs level to the next point's x and then up or down to it, as a cumulative
// count does.
type Line struct {
	XYs   []Point
	Style LineStyle
	Step  bool
}

// DataRange returns the extent of the line's points.
func (l *Line) DataRange() (xmin, xmax, ymin, ymax float64) { return dataRange(l.XYs) }

// Draw draws the line.
func (l *Line) Draw(c Canvas, t Transform) {
	var p Path
	open := false
	var prev Point
	for _, d := range l.XYs {
		q := t.Point(d)
		if !finite(q.X) || !finite(q.Y) {
			open = false
			continue
		}
		switch {
		case !open:
			p.MoveTo(q.X, q.Y)
		case l.Step:
			p.lineToMerged(q.X, prev.Y)
			p.lineToMerged(q.X, q.Y)
		default:
			p.lineToMerged(q.X, q.Y)
		}
		prev, open = q, true
	}
	c.Stroke(&p, l.Style)
}

// Thumbnail draws the line's style across the middle of r, for a legend.
func (l *Line) Thumbnail(c Canvas, r Rect) { LineThumb(l.Style).Thumbnail(c, r) }

// Function draws the curve of F from XMin to XMax with Samples points (at least two). It does
// not widen the axes: a fitted curve is drawn across the data that are there.
type Function struct {
	F          func(x float64) float64
	XMin, XMax float64
	Samples    int
	Style      LineStyle
}

// Draw draws the curve.
func (f *Function) Draw(c Canvas, t Transform) {
	n := max(f.Samples, 2)
	xys := make([]Point, n)
	for i := range xys {
		x := f.XMin + (f.XMax-f.XMin)*float64(i)/float64(n-1)
		xys[i] = Point{x, f.F(x)}
	}
	(&Line{XYs: xys, Style: f.Style}).Draw(c, t)
}

// Thumbnail draws the curve's style across the middle of r, for a legend.
func (f *Function) Thumbnail(c Canvas, r Rect) { LineThumb(f.Style).Thumbnail(c, r) }

// Polygon fills the area inside its points with Fill.
type Polygon struct {
	XYs  []Point
	Fill color.Color
}

// DataRange returns the extent of the polygon's points.
func (pg *Polygon) DataRange() (xmin, xmax, ymin, ymax float64) { return dataRange(pg.XYs) }

// Draw fills the polygon.
func (pg *Polygon) Draw(c Canvas, t Transform) {
	var p Path
	for i, d := range pg.XYs {
		q := t.Point(d)
		if !finite(q.X) || !finite(q.Y) {
			continue
		}
		if i == 0 {
			p.MoveTo(q.X, q.Y)
		} else {
			p.LineTo(q.X, q.Y)
		}
	}
	p.Close()
	c.Fill(&p, pg.Fill)
}

// Thumbnail fills r with the polygon's colour, for a legend.
func (pg *Polygon) Thumbnail(c Canvas, r Rect) { Swatch{Fill: pg.Fill}.Thumbnail(c, r) }

// Scatter draws a marker at each point that lies in the data area; markers are not cut at its
// edge.
type Scatter struct {
	XYs    []Point
	Marker Marker
}

// DataRange returns the extent of the points.
func (s *Scatter) DataRange() (xmin, xmax, ymin, ymax float64) { return dataRange(s.XYs) }

// Draw draws the markers.
func (s *Scatter) Draw(c Canvas, t Transform) {
	for _, d := range s.XYs {
		if q := t.Point(d); t.Data.Contains(q) {
			s.Marker.Draw(c, q)
		}
	}
}

func (s *Scatter) noClip() {}

// Thumbnail draws the marker in the middle of r, for a legend.
func (s *Scatter) Thumbnail(c Canvas, r Rect) { s.Marker.Draw(c, centre(r)) }

// Box is a rectangle in data coordinates, filled with Fill (nil for none) and outlined with
// Line.
type Box struct {
	X0, X1, Y0, Y1 float64
	Fill           color.Color
	Line           LineStyle
}

// Boxes draws rectangles given in data coordinates, such as bars.
type Boxes []Box

// DataRange returns the extent of the rectangles.
func (bs Boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	var xys []Point
	for _, b := range bs {
		xys = append(xys, Point{b.X0, b.Y0}, Point{b.X1, b.Y1})
	}
	return dataRange(xys)
}

// Draw draws the rectangles in order.
func (bs Boxes) Draw(c Canvas, t Transform) {
	for _, b := range bs {
		p0, p1 := t.Point(Point{b.X0, b.Y0}), t.Point(Point{b.X1, b.Y1})
		r := Rect{Point{math.Min(p0.X, p1.X), math.Min(p0.Y, p1.Y)}, Point{math.Max(p0.X, p1.X), math.Max(p0.Y, p1.Y)}}
		if !finite(r.Min.X) || !finite(r.Min.Y) || !finite(r.Max.X) || !finite(r.Max.Y) {
			continue
		}
		if b.Fill != nil {
			c.Fill(RectPath(r), b.Fill)
		}
		c.Stroke(RectPath(r), b.Line)
	}
}

// Thumbnail draws the first rectangle's fill and outline over r, for a legend.
func (bs Boxes) Thumbnail(c Canvas, r Rect) {
	if len(bs) > 0 {
		Swatch{Fill: bs[0].Fill, Line: bs[0].Line}.Thumbnail(c, r)
	}
}

// Labels writes a text beside each point that lies in the data area, Offset points away
// (right and down).
type Labels struct {
	XYs    []Point
	Texts  []string
	Offset Point
	Style  TextStyle
}

// DataRange returns the extent of the labelled points.
func (l *Labels) DataRange() (xmin, xmax, ymin, ymax float64) { return dataRange(l.XYs) }

// Draw writes the labels.
func (l *Labels) Draw(c Canvas, t Transform) {
	for i, d := range l.XYs {
		if i >= len(l.Texts) {
			break
		}
		if q := t.Point(d); t.Data.Contains(q) {
			c.Text(Point{q.X + l.Offset.X, q.Y + l.Offset.Y}, l.Texts[i], l.Style)
		}
	}
}

func (l *Labels) noClip() {}

// Custom is an item drawn by a function of the caller's, over a data range of its own.
type Custom struct {
	XMin, XMax, YMin, YMax float64
	Fn                     func(c Canvas, t Transform)
}

// DataRange returns the range the caller gave.
func (cu *Custom) DataRange() (xmin, xmax, ymin, ymax float64) {
	return cu.XMin, cu.XMax, cu.YMin, cu.YMax
}

// Draw calls the caller's function.
func (cu *Custom) Draw(c Canvas, t Transform) { cu.Fn(c, t) }

func centre(r Rect) Point { return Point{(r.Min.X + r.Max.X) / 2, (r.Min.Y + r.Max.Y) / 2} }
