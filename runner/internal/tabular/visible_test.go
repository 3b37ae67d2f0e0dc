package tabular

import (
	"bytes"
	"testing"
)

// hostile is text a server might answer with: clear the screen, set the window title, colour
// the text, a C1 control sequence introducer, a lone 8-bit CSI byte, a carriage return that
// would overwrite the line, DEL, and a tab and a newline.
const hostile = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\x9b\rx\x7f\ty\nz"

func TestVisible(t *testing.T) {
	tests := []struct{ in, want, lines string }{
		{hostile, `\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\x9b\x0dx\x7f\x09y\x0az`,
			`\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\x9b\x0dx\x7f` + "\ty\nz"},
		{"plain text, é and 日本 and a \\x1b", "plain text, é and 日本 and a \\x1b", "plain text, é and 日本 and a \\x1b"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := VisibleLines(tt.in); got != tt.lines {
			t.Errorf("VisibleLines(%q) = %q, want %q", tt.in, got, tt.lines)
		}
	}
	var buf bytes.Buffer
	if n, err := VisibleWriter(&buf).Write([]byte(hostile)); n != len(hostile) || err != nil {
		t.Errorf("VisibleWriter.Write = %d, %v", n, err)
	}
	if buf.String() != VisibleLines(hostile) {
		t.Errorf("VisibleWriter wrote %q", buf.String())
	}
}

func TestMarkdown(t *testing.T) {
	in := "<img src=x onerror=alert(1)> | a*b `c`\n\x1b[2J"
	want := `\<img src=x onerror=alert(1)\> \| a\*b 'c' \x1b[2J`
	if got := Markdown(in); got != want {
		t.Errorf("Markdown(%q) = %q, want %q", in, got, want)
	}
}
