// Package chart draws the report's charts. A Canvas takes paths, circles and text in points
// (1/72 inch) with the origin at the top left and y growing downwards; it has two backends, SVG
// written as text and PNG rasterised with golang.org/x/image/vector. On top of the canvas, a
// Plot has axes with round ticks on a linear or logarithmic scale, gridlines, lines, step
// lines, scatters, filled polygons, rectangles and labels; a Legend lists series beside or under
// the plots; DrawGrid tiles plots so that their data areas line up.
package chart

import (
	"image/color"
	"math"
)

// Point is a position on a canvas, in points from the top left corner, y downwards; in data
// coordinates it is simply a pair of values.
type Point struct{ X, Y float64 }

// Rect is a rectangle on a canvas: Min is its top left corner, Max its bottom right one.
type Rect struct{ Min, Max Point }

// W returns the width of r.
func (r Rect) W() float64 { return r.Max.X - r.Min.X }

// H returns the height of r.
func (r Rect) H() float64 { return r.Max.Y - r.Min.Y }

// Inset returns r shrunk by the given margins; a negative margin grows it.
func (r Rect) Inset(left, top, right, bottom float64) Rect {
	return Rect{Point{r.Min.X + left, r.Min.Y + top}, Point{r.Max.X - right, r.Max.Y - bottom}}
}

// Contains reports whether p lies in r, edges included, with a small tolerance for rounding.
func (r Rect) Contains(p Point) bool {
	const eps = 1e-6
	return p.X >= r.Min.X-eps && p.X <= r.Max.X+eps && p.Y >= r.Min.Y-eps && p.Y <= r.Max.Y+eps
}

// Path is a sequence of subpaths, each a polyline that may be closed.
type Path struct {
	subs   [][]Point
	closed []bool
}

// MoveTo starts a new subpath at (x, y).
func (p *Path) MoveTo(x, y float64) {
	p.subs = append(p.subs, []Point{{x, y}})
	p.closed = append(p.closed, false)
}

// LineTo extends the current subpath to (x, y), or starts one there if there is none.
func (p *Path) LineTo(x, y float64) {
	if len(p.subs) == 0 {
		p.MoveTo(x, y)
		return
	}
	i := len(p.subs) - 1
	p.subs[i] = append(p.subs[i], Point{x, y})
}

// lineToMerged is LineTo for long polylines, such as a cumulative distribution over thousands
// of points: a point where the line already is adds nothing, and a level or upright segment
// that carries on in the same direction as the one before extends it instead of adding a
// point. The line drawn is the same.
func (p *Path) lineToMerged(x, y float64) {
	if len(p.subs) == 0 {
		p.MoveTo(x, y)
		return
	}
	i := len(p.subs) - 1
	sub := p.subs[i]
	n := len(sub)
	last := sub[n-1]
	if last.X == x && last.Y == y {
		return
	}
	if n >= 2 {
		prev := sub[n-2]
		level := prev.Y == last.Y && last.Y == y && (last.X-prev.X)*(x-last.X) > 0
		upright := prev.X == last.X && last.X == x && (last.Y-prev.Y)*(y-last.Y) > 0
		if level || upright {
			sub[n-1] = Point{x, y}
			return
		}
	}
	p.subs[i] = append(sub, Point{x, y})
}

// Close closes the current subpath back to its first point.
func (p *Path) Close() {
	if n := len(p.closed); n > 0 {
		p.closed[n-1] = true
	}
}

// Empty reports whether the path has no segment to draw.
func (p *Path) Empty() bool {
	for _, s := range p.subs {
		if len(s) > 1 {
			return false
		}
	}
	return true
}

// RectPath returns the closed path around r.
func RectPath(r Rect) *Path {
	var p Path
	p.MoveTo(r.Min.X, r.Min.Y)
	p.LineTo(r.Max.X, r.Min.Y)
	p.LineTo(r.Max.X, r.Max.Y)
	p.LineTo(r.Min.X, r.Max.Y)
	p.Close()
	return &p
}

// LineStyle is how a path is stroked. A nil Color or a Width of zero draws nothing; Dashes
// alternate the lengths drawn and skipped, in points, starting with one drawn.
type LineStyle struct {
	Color  color.Color
	Width  float64
	Dashes []float64
}

// visible reports whether the style draws anything.
func (s LineStyle) visible() bool {
	if s.Color == nil || !(s.Width > 0) {
		return false
	}
	_, _, _, a := s.Color.RGBA()
	return a > 0
}

// Anchor is the point of a text that its position names.
type Anchor int

// The anchors of a text, along its direction of reading.
const (
	Start Anchor = iota
	Middle
	End
)

// fraction returns how far along the text the anchor lies.
func (a Anchor) fraction() float64 {
	switch a {
	case Middle:
		return 0.5
	case End:
		return 1
	}
	return 0
}

// TextStyle is how a text is drawn. Size is in points (a text of no size is not drawn); a nil
// Color is black. A Vertical text reads from bottom to top, turned a quarter counter-clockwise
// about its position.
type TextStyle struct {
	Size     float64
	Color    color.Color
	Anchor   Anchor
	Vertical bool
}

// Canvas is a surface to draw on. Sizes are in points, the origin at the top left, y growing
// downwards. Clips nest: a PushClip holds until its PopClip.
type Canvas interface {
	// Size returns the width and height of the canvas.
	Size() (w, h float64)
	// Fill fills the closed area of every subpath of p with c (non-zero winding).
	Fill(p *Path, c color.Color)
	// Stroke draws the lines of p with s: butt ends and round joins.
	Stroke(p *Path, s LineStyle)
	// Circle fills a circle with fill (nil for none) and strokes its outline with line.
	Circle(center Point, radius float64, fill color.Color, line LineStyle)
	// Text draws text with its baseline through at, placed along it by s.Anchor.
	Text(at Point, text string, s TextStyle)
	// TextWidth returns the width that Text gives text at size points.
	TextWidth(text string, size float64) float64
	// PushClip limits what is drawn to r, within any clip already pushed.
	PushClip(r Rect)
	// PopClip removes the clip pushed last.
	PopClip()
}

// Font proportions shared by both backends, in ems: how far capitals and digits rise above the
// baseline, and how far descenders fall below it. Layout uses them to centre text on a point.
const (
	capHeight = 0.72
	descent   = 0.21
)

// textMiddle returns the baseline that centres a line of capitals and digits of size points on
// y.
func textMiddle(y, size float64) float64 { return y + capHeight*size/2 }

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
