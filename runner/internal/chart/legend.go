package chart

import (
	"image/color"
	"math"
)

// Thumb is what a legend entry shows before its text: a sample of a series' look.
type Thumb interface {
	// Thumbnail draws the sample within r.
	Thumbnail(c Canvas, r Rect)
}

// LineThumb is a legend sample of a line style: a line across the middle.
type LineThumb LineStyle

// Thumbnail draws the line.
func (l LineThumb) Thumbnail(c Canvas, r Rect) {
	var p Path
	y := (r.Min.Y + r.Max.Y) / 2
	p.MoveTo(r.Min.X, y)
	p.LineTo(r.Max.X, y)
	c.Stroke(&p, LineStyle(l))
}

// Swatch is a legend sample of a filled area: a rectangle with a fill and an outline.
type Swatch struct {
	Fill color.Color
	Line LineStyle
}

// Thumbnail fills r and outlines it.
func (s Swatch) Thumbnail(c Canvas, r Rect) {
	if s.Fill != nil {
		c.Fill(RectPath(r), s.Fill)
	}
	c.Stroke(RectPath(r), s.Line)
}

// MarkerThumb is a legend sample of a marker, drawn in the middle.
type MarkerThumb Marker

// Thumbnail draws the marker.
func (m MarkerThumb) Thumbnail(c Canvas, r Rect) { Marker(m).Draw(c, centre(r)) }

// Legend lists labelled samples, one entry a row, the samples left of the texts.
type Legend struct {
	entries []legendEntry
}

type legendEntry struct {
	text   string
	thumbs []Thumb
}

// Legend layout, in points.
const (
	legendThumbW = 22.0 // the width of a sample
	legendGap    = 3.0  // between the sample and its text
	legendRow    = TickLabelSize * 1.25
)

// Add adds an entry whose samples are thumbs drawn on top of each other.
func (l *Legend) Add(text string, thumbs ...Thumb) {
	l.entries = append(l.entries, legendEntry{text: text, thumbs: thumbs})
}

// Len returns the number of entries.
func (l *Legend) Len() int { return len(l.entries) }

// Size returns the width and height the legend takes.
func (l *Legend) Size(c Canvas) (w, h float64) {
	if len(l.entries) == 0 {
		return 0, 0
	}
	widest := 0.0
	for _, e := range l.entries {
		widest = math.Max(widest, c.TextWidth(e.text, TickLabelSize))
	}
	return legendThumbW + legendGap + widest, float64(len(l.entries)) * legendRow
}

// Draw draws the legend with its top left corner at at.
func (l *Legend) Draw(c Canvas, at Point) {
	for i, e := range l.entries {
		top := at.Y + float64(i)*legendRow
		mid := top + legendRow/2
		box := Rect{Point{at.X, mid - TickLabelSize*0.4}, Point{at.X + legendThumbW, mid + TickLabelSize*0.4}}
		for _, t := range e.thumbs {
			t.Thumbnail(c, box)
		}
		c.Text(Point{at.X + legendThumbW + legendGap, textMiddle(mid, TickLabelSize)}, e.text, TextStyle{Size: TickLabelSize})
	}
}

// PlaceLegend draws legend l outside the data, so that it never hides any: in a column at the
// top right of area when it is narrow (up to 30 % of the width), else in rows under it. It
// returns the rest of area, for the plots, within a small margin.
func PlaceLegend(c Canvas, area Rect, l *Legend) Rect {
	area = area.Inset(4, 2, 10, 4)
	w, h := l.Size(c)
	if w == 0 {
		return area
	}
	if w <= 0.3*area.W() {
		l.Draw(c, Point{area.Max.X - w, area.Min.Y + 28})
		return area.Inset(0, 0, w+14, 0)
	}
	l.Draw(c, Point{area.Min.X + 40, area.Max.Y - h})
	return area.Inset(0, 0, 0, h+10)
}
