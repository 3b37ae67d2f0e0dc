package chart

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// Raster is a Canvas that paints an image, anti-aliased, for a PNG file. Text is set in Go
// Regular, and measured in it too, so that the layout fits what is drawn.
type Raster struct {
	w, h  float64 // points
	scale float64 // pixels per point
	img   *image.RGBA
	clips []image.Rectangle
	z     vector.Rasterizer
	faces map[float64]font.Face
	err   error // the first failure to make a face, returned by WritePNG
}

var _ Canvas = (*Raster)(nil)

// NewRaster returns a canvas of w × h points painted at dpi pixels per inch, white to begin
// with.
func NewRaster(w, h, dpi float64) *Raster {
	scale := dpi / 72
	px := image.Rect(0, 0, int(math.Round(w*scale)), int(math.Round(h*scale)))
	img := image.NewRGBA(px)
	draw.Draw(img, px, image.White, image.Point{}, draw.Src)
	return &Raster{w: w, h: h, scale: scale, img: img, faces: map[float64]font.Face{}}
}

// Size returns the canvas size in points.
func (r *Raster) Size() (w, h float64) { return r.w, r.h }

// Image returns the image painted so far.
func (r *Raster) Image() *image.RGBA { return r.img }

// WritePNG encodes the image as PNG to w. It fails, writing nothing, when some text could not
// be set.
func (r *Raster) WritePNG(w io.Writer) error {
	if r.err != nil {
		return r.err
	}
	if err := png.Encode(w, r.img); err != nil {
		return fmt.Errorf("png: %w", err)
	}
	return nil
}

// bounds returns the pixels that may be painted: the image within the innermost clip.
func (r *Raster) bounds() image.Rectangle {
	if n := len(r.clips); n > 0 {
		return r.clips[n-1]
	}
	return r.img.Bounds()
}

// PushClip limits painting to the pixels within rect (rounded outwards) and any earlier clip.
func (r *Raster) PushClip(rect Rect) {
	px := image.Rect(int(math.Floor(rect.Min.X*r.scale)), int(math.Floor(rect.Min.Y*r.scale)),
		int(math.Ceil(rect.Max.X*r.scale)), int(math.Ceil(rect.Max.Y*r.scale)))
	r.clips = append(r.clips, px.Intersect(r.bounds()))
}

// PopClip removes the clip pushed last.
func (r *Raster) PopClip() {
	if n := len(r.clips); n > 0 {
		r.clips = r.clips[:n-1]
	}
}

// px returns the subpaths of p in pixels, closing each one that is closed.
func (r *Raster) px(p *Path) (subs [][]Point, closed []bool) {
	for i, sub := range p.subs {
		q := make([]Point, len(sub))
		for j, pt := range sub {
			q[j] = Point{pt.X * r.scale, pt.Y * r.scale}
		}
		subs = append(subs, q)
		closed = append(closed, p.closed[i])
	}
	return subs, closed
}

// Fill fills every subpath of p.
func (r *Raster) Fill(p *Path, c color.Color) {
	if c == nil {
		return
	}
	subs, _ := r.px(p)
	r.fillPolygons(subs, c)
}

// Stroke draws the lines of p: each segment a rectangle as wide as the line, and a disc at
// each joint, so that the line turns without a notch.
func (r *Raster) Stroke(p *Path, ls LineStyle) {
	if !ls.visible() {
		return
	}
	subs, closed := r.px(p)
	width := ls.Width * r.scale
	var dashes []float64
	for _, d := range ls.Dashes {
		dashes = append(dashes, d*r.scale)
	}
	var polys [][]Point
	for i, sub := range subs {
		if closed[i] && len(sub) > 1 {
			sub = append(sub, sub[0])
		}
		pieces := [][]Point{sub}
		if len(dashes) > 0 {
			pieces = dash(sub, dashes)
		}
		for j, piece := range pieces {
			// A closed line without dashes also turns at its first point.
			joinEnds := closed[i] && len(dashes) == 0 && j == 0
			polys = append(polys, strokePolygons(piece, width, joinEnds)...)
		}
	}
	r.fillPolygons(polys, ls.Color)
}

// Circle draws a circle as a polygon fine enough to look round.
func (r *Raster) Circle(c Point, radius float64, fill color.Color, ls LineStyle) {
	if !(radius > 0) {
		return
	}
	ring := circlePolygon(Point{c.X * r.scale, c.Y * r.scale}, radius*r.scale)
	if fill != nil {
		r.fillPolygons([][]Point{ring}, fill)
	}
	if ls.visible() {
		r.fillPolygons(strokePolygons(append(ring, ring[0]), ls.Width*r.scale, true), ls.Color)
	}
}

// fillPolygons paints the union of polys, in pixels, with c: the rasterizer covers only their
// bounding box within the clip, which both clips them and keeps it small.
func (r *Raster) fillPolygons(polys [][]Point, c color.Color) {
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	n := 0
	for _, poly := range polys {
		if len(poly) < 3 {
			continue
		}
		for _, pt := range poly {
			x0, y0 = math.Min(x0, pt.X), math.Min(y0, pt.Y)
			x1, y1 = math.Max(x1, pt.X), math.Max(y1, pt.Y)
		}
		n++
	}
	if n == 0 || !finite(x0) || !finite(y0) || !finite(x1) || !finite(y1) {
		return
	}
	box := image.Rect(int(math.Floor(x0)), int(math.Floor(y0)), int(math.Ceil(x1)), int(math.Ceil(y1))).Intersect(r.bounds())
	if box.Empty() {
		return
	}
	r.z.Reset(box.Dx(), box.Dy())
	ox, oy := float64(box.Min.X), float64(box.Min.Y)
	for _, poly := range polys {
		if len(poly) < 3 {
			continue
		}
		r.z.MoveTo(float32(poly[0].X-ox), float32(poly[0].Y-oy))
		for _, pt := range poly[1:] {
			r.z.LineTo(float32(pt.X-ox), float32(pt.Y-oy))
		}
		r.z.ClosePath()
	}
	r.z.Draw(r.img, box, image.NewUniform(c), image.Point{})
}

// dash cuts a polyline into the pieces that dashes draw: lengths alternately drawn and
// skipped, the pattern carried on around corners.
func dash(line []Point, dashes []float64) [][]Point {
	total := 0.0
	for _, d := range dashes {
		total += d
	}
	if !(total > 0) {
		return [][]Point{line}
	}
	var out [][]Point
	var cur []Point
	k, left := 0, dashes[0] // the current dash, and how much of it is left
	on := true
	for i := 0; i+1 < len(line); i++ {
		a, b := line[i], line[i+1]
		seg := math.Hypot(b.X-a.X, b.Y-a.Y)
		pos := 0.0
		for seg-pos > left {
			pos += left
			t := pos / seg
			p := Point{a.X + t*(b.X-a.X), a.Y + t*(b.Y-a.Y)}
			if on {
				if len(cur) == 0 {
					cur = append(cur, a)
				}
				out = append(out, append(cur, p))
				cur = nil
			} else {
				cur = []Point{p}
			}
			on = !on
			k = (k + 1) % len(dashes)
			left = dashes[k]
		}
		left -= seg - pos
		if on {
			if len(cur) == 0 {
				cur = append(cur, a)
			}
			cur = append(cur, b)
		}
	}
	if on && len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}

// strokePolygons returns the polygons that cover a polyline stroked width wide: a rectangle per
// segment and a disc at each inner joint (and at the ends too when joinEnds, for a closed
// line). Every polygon winds the same way, so that where they overlap the rasterizer adds
// their coverage rather than cancelling it.
func strokePolygons(line []Point, width float64, joinEnds bool) [][]Point {
	hw := width / 2
	var out [][]Point
	for i := 0; i+1 < len(line); i++ {
		a, b := line[i], line[i+1]
		dx, dy := b.X-a.X, b.Y-a.Y
		l := math.Hypot(dx, dy)
		if !(l > 0) {
			continue
		}
		nx, ny := -dy/l*hw, dx/l*hw
		out = append(out, wound([]Point{{a.X + nx, a.Y + ny}, {b.X + nx, b.Y + ny}, {b.X - nx, b.Y - ny}, {a.X - nx, a.Y - ny}}))
	}
	if len(out) > 1 || joinEnds {
		for i, p := range line {
			if (i == 0 || i == len(line)-1) && !joinEnds {
				continue
			}
			out = append(out, circlePolygon(p, hw))
		}
	}
	return out
}

// circlePolygon returns a polygon around a circle, in pixels, its segments short enough that
// the edge looks smooth.
func circlePolygon(c Point, radius float64) []Point {
	n := int(math.Ceil(2 * math.Pi * radius / 1.5))
	n = min(max(n, 8), 96)
	out := make([]Point, n)
	for i := range out {
		a := 2 * math.Pi * float64(i) / float64(n)
		out[i] = Point{c.X + radius*math.Cos(a), c.Y + radius*math.Sin(a)}
	}
	return wound(out)
}

// wound returns poly turned, if need be, so that its signed area is positive.
func wound(poly []Point) []Point {
	area := 0.0
	for i := range poly {
		j := (i + 1) % len(poly)
		area += poly[i].X*poly[j].Y - poly[j].X*poly[i].Y
	}
	if area < 0 {
		for i, j := 0, len(poly)-1; i < j; i, j = i+1, j-1 {
			poly[i], poly[j] = poly[j], poly[i]
		}
	}
	return poly
}

// goRegular is the font of the PNG text, parsed once.
var goRegular = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(goregular.TTF) })

// face returns the Go Regular face of size points at the canvas resolution, or nil, noting
// the error for WritePNG, when it cannot be made.
func (r *Raster) face(size float64) font.Face {
	if f, ok := r.faces[size]; ok {
		return f
	}
	var face font.Face
	f, err := goRegular()
	if err == nil {
		face, err = opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72 * r.scale, Hinting: font.HintingNone})
	}
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("go regular font at %g pt: %w", size, err)
		}
		face = nil
	}
	r.faces[size] = face
	return face
}

// TextWidth returns the width of text in Go Regular.
func (r *Raster) TextWidth(text string, size float64) float64 {
	face := r.face(size)
	if face == nil {
		return 0
	}
	return fixedToFloat(font.MeasureString(face, text)) / r.scale
}

func fixedToFloat(v fixed.Int26_6) float64 { return float64(v) / 64 }

// Text draws text in Go Regular. A vertical text is drawn level on a mask of its own and
// turned a quarter, pixel by pixel, which is exact.
func (r *Raster) Text(at Point, text string, ts TextStyle) {
	if text == "" || !(ts.Size > 0) {
		return
	}
	var col color.Color = color.Black
	if ts.Color != nil {
		col = ts.Color
	}
	face := r.face(ts.Size)
	if face == nil {
		return
	}
	width := fixedToFloat(font.MeasureString(face, text))
	x, y := at.X*r.scale, at.Y*r.scale
	if !ts.Vertical {
		d := font.Drawer{Dst: r.img, Src: image.NewUniform(col), Face: face,
			Dot: fixed.Point26_6{X: fixed.Int26_6(math.Round((x - width*ts.Anchor.fraction()) * 64)), Y: fixed.Int26_6(math.Round(y * 64))}}
		d.DrawString(text)
		return
	}
	m := face.Metrics()
	asc, desc := m.Ascent.Ceil(), m.Descent.Ceil()
	tw, th := int(math.Ceil(width))+2, asc+desc+2
	level := image.NewAlpha(image.Rect(0, 0, tw, th))
	d := font.Drawer{Dst: level, Src: image.Opaque, Face: face, Dot: fixed.P(1, asc+1)}
	d.DrawString(text)
	// Level pixel (lx, ly) goes to (ly, tw-1-lx) of the turned mask: along the text is up.
	turned := image.NewAlpha(image.Rect(0, 0, th, tw))
	for ly := range th {
		for lx := range tw {
			turned.Pix[(tw-1-lx)*turned.Stride+ly] = level.Pix[ly*level.Stride+lx]
		}
	}
	// The anchor lies at level (1 + fraction·width, asc+1), so at turned (asc+1, tw-2-fraction·width).
	ax := float64(asc + 1)
	ay := float64(tw-2) - ts.Anchor.fraction()*width
	ox, oy := int(math.Round(x-ax)), int(math.Round(y-ay))
	dst := image.Rect(ox, oy, ox+th, oy+tw)
	draw.DrawMask(r.img, dst, image.NewUniform(col), image.Point{}, turned, image.Point{}, draw.Over)
}
