package tabular

import (
	"io"
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

// WriteLabelled writes the lines of table to w, each line i of above preceded by a line of its
// own, "  " and the label: a table of metrics headed by each config's label, so that a long
// label does not widen the table. It returns the first write error.
func WriteLabelled(w io.Writer, table string, above map[int]string) error {
	for i, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		if label, ok := above[i]; ok {
			if _, err := io.WriteString(w, "  "+label+"\n"); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
	}
	return nil
}
