package engine

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxLineLen bounds one kept log line; a longer line is cut, with a marker.
const maxLineLen = 2000

// tail keeps the last lines written to it. It is an io.Writer that splits on newlines; a
// partial last line is kept until its newline or a call to lines.
type tail struct {
	mu      sync.Mutex
	ring    []string
	next    int
	full    bool
	partial []byte
}

func newTail(n int) *tail { return &tail{ring: make([]string, n)} }

// Write implements io.Writer.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rest := cutLines(&t.partial, p, func(line []byte) { t.add(string(line)) })
	// Only the first maxLineLen bytes of a line are kept: clipLine cuts the rest anyway.
	if len(t.partial) < maxLineLen {
		t.partial = append(t.partial, rest...)
	}
	return len(p), nil
}

// cutLines hands line each line that p completes, without its newline: the first one joined to
// the unfinished line *partial holds, which is then emptied. It returns the bytes after p's last
// newline, the start of the next line, for the caller to keep in *partial as it sees fit.
func cutLines(partial *[]byte, p []byte, line func([]byte)) (rest []byte) {
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return p
		}
		if len(*partial) > 0 {
			*partial = append(*partial, p[:i]...)
			line(*partial)
			*partial = (*partial)[:0]
		} else {
			line(p[:i])
		}
		p = p[i+1:]
	}
}

func (t *tail) add(line string) {
	line = clipLine(strings.TrimRight(line, "\r"))
	t.ring[t.next] = line
	t.next = (t.next + 1) % len(t.ring)
	if t.next == 0 {
		t.full = true
	}
}

// lines returns the kept lines, oldest first, with any unfinished last line.
func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	if t.full {
		out = append(out, t.ring[t.next:]...)
	}
	out = append(out, t.ring[:t.next]...)
	if len(t.partial) > 0 {
		out = append(out, clipLine(string(t.partial)))
	}
	return out
}

// clipLine cuts a line to maxLineLen bytes on a rune boundary.
func clipLine(s string) string {
	if len(s) <= maxLineLen {
		return s
	}
	cut := maxLineLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " [cut]"
}

// lockedWriter serialises writes from several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write implements io.Writer.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// quoteLines renders log lines for an error message, one per line, indented with "| ".
func quoteLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n  | ")
		b.WriteString(l)
	}
	return b.String()
}

// excerpt returns at most n bytes of b as one line of text.
func excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
