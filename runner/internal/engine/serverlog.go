package engine

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/onelayerdown/runner/runner/internal/redact"
)

// maxPartial bounds a line still waiting for its newline; a longer one is written as it is.
const maxPartial = 64 << 10

// serverLog receives a server's stdout and stderr. It writes each line, secrets redacted, to
// the log writer, keeps the last lines for error messages and checks each line for known
// failures.
type serverLog struct {
	mu      sync.Mutex
	out     *lockedWriter // shared with sibling logs
	red     *redact.Replacer
	tail    *tail
	hints   *hintScanner
	partial []byte
	name    string // how errors refer to the log
}

func newServerLog(out io.Writer, red *redact.Replacer, info hintInfo) *serverLog {
	return &serverLog{
		out:   &lockedWriter{w: orDiscard(out)},
		red:   red,
		tail:  newTail(logTailLines),
		hints: newHintScanner(info),
	}
}

// sibling returns a log for another writer (a post-ready command) that shares this one's
// destination, tail and hints but not its unfinished line.
func (l *serverLog) sibling() *serverLog {
	return &serverLog{out: l.out, red: l.red, tail: l.tail, hints: l.hints, name: l.name}
}

// Write implements io.Writer.
func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := cutLines(&l.partial, p, l.emit)
	l.partial = append(l.partial, rest...)
	if len(l.partial) > maxPartial {
		l.emit(l.partial)
		l.partial = l.partial[:0]
	}
	return len(p), nil
}

// emit handles one complete line; l.mu is held.
func (l *serverLog) emit(b []byte) {
	line := l.red.String(strings.TrimSuffix(string(b), "\r"))
	l.out.Write([]byte(line + "\n"))
	l.hints.scan(line)
	// A progress bar redraws itself with carriage returns; keep what a terminal would show.
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	l.tail.Write([]byte(line + "\n"))
}

// flush handles an unfinished last line.
func (l *serverLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.emit(l.partial)
		l.partial = l.partial[:0]
	}
}

// note writes one line of the runner's own about the server, marked [runner].
func (l *serverLog) note(format string, args ...any) {
	l.out.Write([]byte("[runner] " + l.red.String(fmt.Sprintf(format, args...)) + "\n"))
}

// lines returns the last lines of the log.
func (l *serverLog) lines() []string { return l.tail.lines() }
