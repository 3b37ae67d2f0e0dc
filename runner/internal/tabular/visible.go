package tabular

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Visible returns s with every control character written as an escape that a terminal shows
// rather than obeys: the C0 controls (tab, newline and carriage return included), DEL and ESC
// as \x1b, the C1 controls as \u009b, and a byte that is not UTF-8 as \xNN (a terminal in 8-bit
// mode reads a lone 0x9b as a control sequence). Text from a server (an error body, generated
// text, a log line) and from a result folder is printed through it, so that an escape sequence
// in it cannot clear the screen, recolour the terminal or set its window title.
func Visible(s string) string { return visible(s, false) }

// VisibleLines is Visible for text laid out over lines: it keeps newlines and tabs.
func VisibleLines(s string) string { return visible(s, true) }

// visible escapes s; lines keeps newlines and tabs.
func visible(s string, lines bool) string {
	if !needsEscape(s, lines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r, lines) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r, lines):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether s holds a byte or rune that visible escapes.
func needsEscape(s string, lines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if isControl(rune(c), lines) {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || isControl(r, lines) {
			return true
		}
		i += n
	}
	return false
}

// isControl reports whether r is a C0 control, DEL or a C1 control; lines spares newlines and
// tabs.
func isControl(r rune, lines bool) bool {
	if lines && (r == '\n' || r == '\t') {
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// VisibleWriter returns a writer that escapes what is written to w as VisibleLines does, one
// Write at a time: a character split across two writes would be escaped as two bytes that are
// not UTF-8, so write whole strings, as fmt and text/tabwriter do.
func VisibleWriter(w io.Writer) io.Writer { return visibleWriter{w} }

type visibleWriter struct{ w io.Writer }

func (v visibleWriter) Write(p []byte) (int, error) {
	s := string(p)
	if !needsEscape(s, true) {
		return v.w.Write(p)
	}
	if _, err := io.WriteString(v.w, visible(s, true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// markdownEscape makes text safe inside a markdown table cell or list item: a pipe would end
// the cell, a line break the row, '<' and '>' would open raw HTML (<img src=x onerror=...>),
// '*' would start emphasis and a backquote a code span. runner diff and runner summary write
// their markdown with it.
var markdownEscape = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", `\<`, ">", `\>`, "*", `\*`, "`", "'")

// Markdown returns s made safe inside a markdown table cell or list item (see markdownEscape),
// with its control characters escaped as Visible does.
func Markdown(s string) string { return Visible(markdownEscape.Replace(s)) }
