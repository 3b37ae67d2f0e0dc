package chart

import (
	"image/color"
	"math"
	"strings"
)

// Sizes of the plot furniture, in points.
const (
	TitleSize     = 11.0 // a plot's title
	AxisLabelSize = 10.0 // an axis's label
	TickLabelSize = 9.0  // the labels of the ticks, and the legend

	tickLen     = 4.0 // a labelled tick, outside the axis
	minorLen    = 2.0 // an unlabelled tick
	axisPad     = 5.0 // between the data and an axis line
	labelGap    = 3.0 // between ticks, their labels and the axis label
	clipOverlap = 3.0 // how far a line may run past the data area, so that a line on its edge shows whole
)

var (
	axisColor = color.Gray{Y: 0x00}
	gridColor = color.Gray{Y: 0xe4}
)

// Axis is one axis of a plot. Min and Max start empty (Min +∞, Max −∞); adding an item to the
// plot widens them to its data, and setting them fixes them (setting Min before adding items
// makes sure that the axis reaches it).
type Axis struct {
	Label    string
	Min, Max float64
	Log      bool   // a logarithmic scale: both ends must be positive
	Ticks    Ticker // nil: NiceTicks, or LogTicks on a logarithmic axis
}

// ticks returns the axis's ticks within its range.
func (a *Axis) ticks() []Tick {
	t := a.Ticks
	if t == nil {
		t = NiceTicks
		if a.Log {
			t = LogTicks
		}
	}
	var out []Tick
	for _, tk := range t(a.Min, a.Max) {
		if finite(tk.Value) && tk.Value >= a.Min-1e-9*math.Abs(a.Min) && tk.Value <= a.Max+1e-9*math.Abs(a.Max) {
			out = append(out, tk)
		}
	}
	return out
}

// settle gives an axis that no item widened, or that covers a single value, a range to draw.
func (a *Axis) settle() {
	if a.Min > a.Max {
		a.Min, a.Max = 0, 1
		if a.Log {
			a.Min, a.Max = 1, 10
		}
	}
	if a.Log && !(a.Min > 0) {
		a.Min = math.Min(a.Max/10, 1)
		if !(a.Min > 0) {
			a.Min, a.Max = 1, 10
		}
	}
	if a.Min == a.Max {
		if a.Log {
			a.Min, a.Max = a.Min/2, a.Max*2
		} else {
			a.Min, a.Max = a.Min-1, a.Max+1
		}
	}
}

// norm returns where v lies along the axis, 0 at Min and 1 at Max.
func (a *Axis) norm(v float64) float64 {
	if a.Log {
		return (math.Log10(v) - math.Log10(a.Min)) / (math.Log10(a.Max) - math.Log10(a.Min))
	}
	return (v - a.Min) / (a.Max - a.Min)
}

// Item is something a plot draws in its data area.
type Item interface {
	// Draw draws the item with t mapping data to the canvas.
	Draw(c Canvas, t Transform)
}

// Ranger is an item whose data widen the plot's axes when it is added.
type Ranger interface {
	// DataRange returns the extent of the item's data; a NaN leaves that end as it is, and so
	// does an end at or below zero on a logarithmic axis.
	DataRange() (xmin, xmax, ymin, ymax float64)
}

// Transform maps data coordinates onto the canvas for the items of a plot.
type Transform struct {
	Data Rect // the data area on the canvas
	x, y *Axis
}

// X returns the canvas x of data value v.
func (t Transform) X(v float64) float64 { return t.Data.Min.X + t.x.norm(v)*t.Data.W() }

// Y returns the canvas y of data value v.
func (t Transform) Y(v float64) float64 { return t.Data.Max.Y - t.y.norm(v)*t.Data.H() }

// Point returns the canvas position of data point p.
func (t Transform) Point(p Point) Point { return Point{t.X(p.X), t.Y(p.Y)} }

// Plot is one panel: a title, two axes, a light grid at the ticks and the items in its data
// area.
type Plot struct {
	Title     string  // may hold several lines
	TitleSize float64 // 0: TitleSize
	X, Y      Axis
	Items     []Item
	NoGrid    bool
	// Message, when set, replaces the axes and the data with this text, centred: for a panel
	// that has nothing to show.
	Message string
}

// New returns an empty plot with a title and axis labels.
func New(title, xLabel, yLabel string) *Plot {
	inf := math.Inf(1)
	return &Plot{Title: title, X: Axis{Label: xLabel, Min: inf, Max: -inf}, Y: Axis{Label: yLabel, Min: inf, Max: -inf}}
}

// Add adds items to the plot, widening its axes to the data of those that are Rangers.
func (p *Plot) Add(items ...Item) {
	for _, it := range items {
		p.Items = append(p.Items, it)
		r, ok := it.(Ranger)
		if !ok {
			continue
		}
		x0, x1, y0, y1 := r.DataRange()
		widen := func(a *Axis, lo, hi float64) {
			if finite(lo) && (!a.Log || lo > 0) {
				a.Min = math.Min(a.Min, lo)
			}
			if finite(hi) && (!a.Log || hi > 0) {
				a.Max = math.Max(a.Max, hi)
			}
		}
		widen(&p.X, x0, x1)
		widen(&p.Y, y0, y1)
	}
}

// titleSize returns the size of the title.
func (p *Plot) titleSize() float64 {
	if p.TitleSize > 0 {
		return p.TitleSize
	}
	return TitleSize
}

// titleLines returns the lines of the title.
func (p *Plot) titleLines() []string {
	if p.Title == "" {
		return nil
	}
	return strings.Split(p.Title, "\n")
}

// margins is the room a plot needs around its data area.
type margins struct{ left, top, right, bottom float64 }

// margins returns the room around the data area for the title, the axes and their labels.
// The axes must have settled.
func (p *Plot) margins(c Canvas) margins {
	var m margins
	m.top = 4
	if n := len(p.titleLines()); n > 0 {
		m.top = float64(n)*p.titleSize()*1.25 + 4
	}
	if p.Message != "" {
		return m
	}
	// The y axis: the widest tick label, the ticks, and the label turned on its side.
	widest := 0.0
	for _, t := range p.Y.ticks() {
		widest = math.Max(widest, c.TextWidth(t.Label, TickLabelSize))
	}
	m.left = axisPad + tickLen + labelGap + widest + 1
	if p.Y.Label != "" {
		m.left += labelGap + AxisLabelSize*(capHeight+descent) + 2
	}
	// The x axis: the ticks, a line of labels and the label.
	m.bottom = p.xLabelTop()
	if p.X.Label != "" {
		m.bottom += AxisLabelSize*(capHeight+descent) + 2
	}
	// The label of the last x tick may reach past the data area.
	m.right = 4
	if ts := p.X.ticks(); len(ts) > 0 {
		if last := ts[len(ts)-1]; p.X.norm(last.Value) > 0.95 {
			m.right = math.Max(m.right, c.TextWidth(last.Label, TickLabelSize)/2+2)
		}
	}
	// The label of the top y tick reaches above the data area by half its height.
	if len(p.titleLines()) == 0 {
		m.top = math.Max(m.top, TickLabelSize*capHeight/2+2)
	}
	return m
}

// xLabelTop returns how far below the data area the x axis's label begins: past the axis
// line, its ticks and their labels, if it has any.
func (p *Plot) xLabelTop() float64 {
	if len(p.X.ticks()) == 0 {
		return axisPad + labelGap
	}
	return axisPad + tickLen + labelGap + TickLabelSize*(capHeight+descent) + labelGap
}

// Draw draws the plot in r.
func (p *Plot) Draw(c Canvas, r Rect) {
	p.X.settle()
	p.Y.settle()
	m := p.margins(c)
	p.drawIn(c, r, m)
}

// drawIn draws the plot in r with the given margins around its data area.
func (p *Plot) drawIn(c Canvas, r Rect, m margins) {
	p.drawTitle(c, r)
	data := r.Inset(m.left, m.top, m.right, m.bottom)
	if p.Message != "" {
		c.Text(Point{(r.Min.X + r.Max.X) / 2, textMiddle((data.Min.Y+data.Max.Y)/2, AxisLabelSize)}, p.Message,
			TextStyle{Size: AxisLabelSize, Anchor: Middle})
		return
	}
	if !(data.W() > 0) || !(data.H() > 0) {
		return
	}
	t := Transform{Data: data, x: &p.X, y: &p.Y}
	xt, yt := p.X.ticks(), p.Y.ticks()
	if !p.NoGrid {
		grid := LineStyle{Color: gridColor, Width: 0.5}
		var g Path
		for _, tk := range xt {
			if tk.Label != "" {
				x := t.X(tk.Value)
				g.MoveTo(x, data.Min.Y)
				g.LineTo(x, data.Max.Y)
			}
		}
		for _, tk := range yt {
			if tk.Label != "" {
				y := t.Y(tk.Value)
				g.MoveTo(data.Min.X, y)
				g.LineTo(data.Max.X, y)
			}
		}
		c.Stroke(&g, grid)
	}
	c.PushClip(data.Inset(-clipOverlap, -clipOverlap, -clipOverlap, -clipOverlap))
	for _, it := range p.Items {
		if _, free := it.(unclipped); free {
			continue
		}
		it.Draw(c, t)
	}
	c.PopClip()
	for _, it := range p.Items {
		if _, free := it.(unclipped); free {
			it.Draw(c, t)
		}
	}
	p.drawAxes(c, data, t, xt, yt)
}

// unclipped is an item drawn outside the clip, such as markers and labels, which decide
// themselves what lies in the data area.
type unclipped interface{ noClip() }

// drawTitle draws the title lines centred at the top of r.
func (p *Plot) drawTitle(c Canvas, r Rect) {
	size := p.titleSize()
	for i, line := range p.titleLines() {
		y := r.Min.Y + float64(i)*size*1.25 + size*(capHeight+0.12)
		c.Text(Point{(r.Min.X + r.Max.X) / 2, y}, line, TextStyle{Size: size, Anchor: Middle})
	}
}

// drawAxes draws the two axis lines with their ticks and labels.
func (p *Plot) drawAxes(c Canvas, data Rect, t Transform, xt, yt []Tick) {
	line := LineStyle{Color: axisColor, Width: 0.5}
	tickStyle := TextStyle{Size: TickLabelSize, Anchor: Middle}

	// The x axis, under the data.
	ay := data.Max.Y + axisPad
	var ax Path
	ax.MoveTo(data.Min.X, ay)
	ax.LineTo(data.Max.X, ay)
	for _, tk := range xt {
		x := t.X(tk.Value)
		ax.MoveTo(x, ay)
		ax.LineTo(x, ay+tk.length())
	}
	c.Stroke(&ax, line)
	labelsY := ay + tickLen + labelGap + TickLabelSize*capHeight
	for _, tk := range xt {
		c.Text(Point{t.X(tk.Value), labelsY}, tk.Label, tickStyle)
	}
	if p.X.Label != "" {
		y := data.Max.Y + p.xLabelTop() + AxisLabelSize*capHeight
		c.Text(Point{(data.Min.X + data.Max.X) / 2, y}, p.X.Label, TextStyle{Size: AxisLabelSize, Anchor: Middle})
	}

	// The y axis, left of the data.
	axX := data.Min.X - axisPad
	var ayp Path
	ayp.MoveTo(axX, data.Min.Y)
	ayp.LineTo(axX, data.Max.Y)
	widest := 0.0
	for _, tk := range yt {
		y := t.Y(tk.Value)
		ayp.MoveTo(axX, y)
		ayp.LineTo(axX-tk.length(), y)
		widest = math.Max(widest, c.TextWidth(tk.Label, TickLabelSize))
	}
	c.Stroke(&ayp, line)
	for _, tk := range yt {
		c.Text(Point{axX - tickLen - labelGap, textMiddle(t.Y(tk.Value), TickLabelSize)}, tk.Label,
			TextStyle{Size: TickLabelSize, Anchor: End})
	}
	if p.Y.Label != "" {
		x := axX - tickLen - labelGap - widest - labelGap - AxisLabelSize*descent
		c.Text(Point{x, (data.Min.Y + data.Max.Y) / 2}, p.Y.Label, TextStyle{Size: AxisLabelSize, Anchor: Middle, Vertical: true})
	}
}

// Grid is how DrawGrid tiles plots: the gaps between them and around them, in points.
type Grid struct {
	PadX, PadY                           float64
	PadLeft, PadRight, PadTop, PadBottom float64
}

// DrawGrid draws plots in a grid of equal tiles over r (a nil plot leaves its tile empty), with
// the data areas of a row at the same height and those of a column at the same width, so that
// their axes line up.
func DrawGrid(c Canvas, plots [][]*Plot, r Rect, g Grid) {
	rows := len(plots)
	if rows == 0 {
		return
	}
	cols := 0
	for _, row := range plots {
		cols = max(cols, len(row))
	}
	left, right := make([]float64, cols), make([]float64, cols)
	top, bottom := make([]float64, rows), make([]float64, rows)
	for i, row := range plots {
		for j, p := range row {
			if p == nil {
				continue
			}
			p.X.settle()
			p.Y.settle()
			m := p.margins(c)
			left[j], right[j] = math.Max(left[j], m.left), math.Max(right[j], m.right)
			top[i], bottom[i] = math.Max(top[i], m.top), math.Max(bottom[i], m.bottom)
		}
	}
	area := r.Inset(g.PadLeft, g.PadTop, g.PadRight, g.PadBottom)
	sumW, sumH := 0.0, 0.0
	for j := range cols {
		sumW += left[j] + right[j]
	}
	for i := range rows {
		sumH += top[i] + bottom[i]
	}
	dataW := (area.W() - sumW - g.PadX*float64(cols-1)) / float64(cols)
	dataH := (area.H() - sumH - g.PadY*float64(rows-1)) / float64(rows)
	y := area.Min.Y
	for i, row := range plots {
		x := area.Min.X
		h := top[i] + dataH + bottom[i]
		for j := range cols {
			w := left[j] + dataW + right[j]
			if j < len(row) && row[j] != nil {
				row[j].drawIn(c, Rect{Point{x, y}, Point{x + w, y + h}}, margins{left[j], top[i], right[j], bottom[i]})
			}
			x += w + g.PadX
		}
		y += h + g.PadY
	}
}

// length is how far tk's mark stands out of its axis: a labelled tick's tickLen, an unlabelled
// one's minorLen.
func (tk Tick) length() float64 {
	if tk.Label == "" {
		return minorLen
	}
	return tickLen
}
