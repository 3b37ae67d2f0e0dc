package tabular

import (
	"strings"
	"unicode/utf8"
)

// Width is the number of columns the text tables and the lines around them fit by default.
const Width = 100

// Wrap breaks text into lines of at most width characters at spaces, the first line starting
// with first and every other with rest (both counted in the width), and returns them joined by
// newlines, without a final one. A word longer than a line is not broken.
func Wrap(text string, width int, first, rest string) string {
	var b strings.Builder
	prefix, used := first, 0
	for i, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
			b.WriteString(prefix)
			used = utf8.RuneCountInString(prefix)
		case used+1+n > width:
			b.WriteString("\n")
			prefix = rest
			b.WriteString(prefix)
			used = utf8.RuneCountInString(prefix)
		default:
			b.WriteString(" ")
			used++
		}
		b.WriteString(word)
		used += n
	}
	return b.String()
}
