package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"strconv"
	"strings"
)

// FontFamily is the font the SVG asks for: Liberation Sans, or the fonts it is metric-compatible
// with, so that the widths SVG.TextWidth estimates hold.
const FontFamily = "Liberation Sans, Arial, Helvetica, sans-serif"

// SVG is a Canvas that writes a standalone SVG document. Text stays text, in FontFamily.
type SVG struct {
	w, h   float64
	id     string
	body   bytes.Buffer
	clips  int // clip paths defined so far, for their ids
	groups int // clip groups open
}

var _ Canvas = (*SVG)(nil)

// NewSVG returns an SVG canvas of w × h points. The ids of its clip paths start with id, so
// that several documents can sit inline in one HTML page without a clash; id should be unique
// on that page and made of letters, digits, '-' and '_'.
func NewSVG(w, h float64, id string) *SVG {
	return &SVG{w: w, h: h, id: id}
}

// Size returns the canvas size in points.
func (s *SVG) Size() (w, h float64) { return s.w, s.h }

// Bytes returns the document: the XML declaration, the svg element with its size, view box and
// font, and what was drawn. Clips still pushed are closed.
func (s *SVG) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%spt" height="%spt" viewBox="0 0 %s %s" font-family="%s">`+"\n",
		num(s.w), num(s.h), num(s.w), num(s.h), FontFamily)
	b.Write(s.body.Bytes())
	for range s.groups {
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// Fill fills every subpath of p.
func (s *SVG) Fill(p *Path, c color.Color) {
	if p.Empty() || c == nil {
		return
	}
	s.body.WriteString(`<path d="`)
	writePathData(&s.body, p, true)
	s.body.WriteString(`"`)
	writePaint(&s.body, "fill", c)
	s.body.WriteString("/>\n")
}

// Stroke draws the lines of p.
func (s *SVG) Stroke(p *Path, ls LineStyle) {
	if p.Empty() || !ls.visible() {
		return
	}
	s.body.WriteString(`<path d="`)
	writePathData(&s.body, p, false)
	s.body.WriteString(`" fill="none"`)
	writeStroke(&s.body, ls)
	s.body.WriteString("/>\n")
}

// Circle draws a circle.
func (s *SVG) Circle(c Point, r float64, fill color.Color, ls LineStyle) {
	if !(r > 0) || (fill == nil && !ls.visible()) {
		return
	}
	fmt.Fprintf(&s.body, `<circle cx="%s" cy="%s" r="%s"`, num(c.X), num(c.Y), num(r))
	if fill == nil {
		s.body.WriteString(` fill="none"`)
	} else {
		writePaint(&s.body, "fill", fill)
	}
	if ls.visible() {
		writeStroke(&s.body, ls)
	}
	s.body.WriteString("/>\n")
}

// Text writes a text element.
func (s *SVG) Text(at Point, text string, ts TextStyle) {
	if text == "" || !(ts.Size > 0) {
		return
	}
	fmt.Fprintf(&s.body, `<text x="%s" y="%s" font-size="%s"`, num(at.X), num(at.Y), num(ts.Size))
	switch ts.Anchor {
	case Middle:
		s.body.WriteString(` text-anchor="middle"`)
	case End:
		s.body.WriteString(` text-anchor="end"`)
	}
	if ts.Vertical {
		fmt.Fprintf(&s.body, ` transform="rotate(-90 %s %s)"`, num(at.X), num(at.Y))
	}
	if ts.Color != nil {
		writePaint(&s.body, "fill", ts.Color)
	}
	s.body.WriteString(">")
	s.body.WriteString(EscapeText(text))
	s.body.WriteString("</text>\n")
}

// TextWidth estimates the width of text in FontFamily from the advance widths of its
// characters.
func (s *SVG) TextWidth(text string, size float64) float64 { return sansWidth(text, size) }

// PushClip defines a clip path for r and opens a group clipped by it.
func (s *SVG) PushClip(r Rect) {
	s.clips++
	id := fmt.Sprintf("%s-clip%d", s.id, s.clips)
	fmt.Fprintf(&s.body, `<clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath>`+"\n",
		id, num(r.Min.X), num(r.Min.Y), num(max(r.W(), 0)), num(max(r.H(), 0)))
	fmt.Fprintf(&s.body, `<g clip-path="url(#%s)">`+"\n", id)
	s.groups++
}

// PopClip closes the group of the last PushClip.
func (s *SVG) PopClip() {
	if s.groups == 0 {
		return
	}
	s.groups--
	s.body.WriteString("</g>\n")
}

// EscapeText returns text with the characters that XML gives a meaning to (&, <, >, " and ')
// written as entities, so that it can stand in an element or an attribute.
func EscapeText(text string) string { return xmlEscaper.Replace(text) }

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// writePathData writes the d attribute of p. Subpaths of a single point are left out; a fill
// closes every subpath, as SVG does anyway.
func writePathData(b *bytes.Buffer, p *Path, fill bool) {
	for i, sub := range p.subs {
		if len(sub) < 2 {
			continue
		}
		// Level and upright segments, which step lines and bars are made of, need only the
		// coordinate that changes.
		var px, py string
		for j, pt := range sub {
			x, y := num(pt.X), num(pt.Y)
			switch {
			case j == 0:
				b.WriteString("M" + x + " " + y)
			case y == py:
				b.WriteString("H" + x)
			case x == px:
				b.WriteString("V" + y)
			default:
				b.WriteString("L" + x + " " + y)
			}
			px, py = x, y
		}
		if p.closed[i] || fill {
			b.WriteByte('Z')
		}
	}
}

// writePaint writes a fill or stroke colour, with its opacity when it is not opaque.
func writePaint(b *bytes.Buffer, attr string, c color.Color) {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	fmt.Fprintf(b, ` %s="#%02x%02x%02x"`, attr, n.R, n.G, n.B)
	if n.A < 0xff {
		fmt.Fprintf(b, ` %s-opacity="%s"`, attr, strconv.FormatFloat(float64(n.A)/255, 'f', 3, 64))
	}
}

// writeStroke writes the stroke attributes of ls.
func writeStroke(b *bytes.Buffer, ls LineStyle) {
	writePaint(b, "stroke", ls.Color)
	fmt.Fprintf(b, ` stroke-width="%s" stroke-linejoin="round"`, num(ls.Width))
	if len(ls.Dashes) > 0 {
		parts := make([]string, len(ls.Dashes))
		for i, d := range ls.Dashes {
			parts[i] = num(d)
		}
		fmt.Fprintf(b, ` stroke-dasharray="%s"`, strings.Join(parts, " "))
	}
}

// num formats a coordinate with at most two decimals and no trailing zeros: a hundredth of a
// point is far below what a screen or a printer shows.
func num(v float64) string { return trimmed(v, 2) }
