package orchestrate

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// Progress reports a run's progress on a writer, normally stderr. On a terminal it keeps one
// status line with a bar and an ETA at the bottom, redrawn in place, and prints notes above it;
// elsewhere (a CI log, a file) it prints one plain line per request. A nil *Progress reports
// nothing.
type Progress struct {
	w        io.Writer
	terminal bool
	quiet    bool // report problems only
	now      func() time.Time

	mu      sync.Mutex
	total   int
	done    int
	servers int
	began   time.Time
	status  string // the status line currently drawn, terminal only
}

// NewProgress returns a Progress writing to w; terminal says whether w is a terminal.
func NewProgress(w io.Writer, terminal bool) *Progress {
	return &Progress{w: w, terminal: terminal, now: time.Now}
}

// NewQuietProgress returns a Progress that reports only problems on w: a server that did not
// boot or exited while serving, and requests that cannot be sent, each with its reason.
func NewQuietProgress(w io.Writer) *Progress {
	return &Progress{w: w, quiet: true, now: time.Now}
}

// off reports whether progress (as opposed to problems) goes unreported.
func (p *Progress) off() bool { return p == nil || p.quiet }

// problem prints a message about something that went wrong, even on a quiet Progress.
func (p *Progress) problem(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printf(format, args...)
}

func (p *Progress) start(total, servers int) {
	if p.off() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.servers, p.began = total, servers, p.now()
	p.printf("%d requests to send to %d server config(s)", total, servers)
}

func (p *Progress) server(i int, srv experiment.Server, id string, configs int) {
	if p.off() {
		return
	}
	what := "booting"
	if !experiment.Boots(srv.Engine) {
		what = "connecting to " + srv.URL
	}
	p.note("server %d/%d: %s (server id %s, %d configs): %s", i+1, p.servers, engineName(srv.Engine), id, configs, what)
}

func engineName(e string) string {
	if e == "" {
		return experiment.DefaultEngine
	}
	return e
}

// note prints one message.
func (p *Progress) note(format string, args ...any) {
	if p.off() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printf(format, args...)
}

// printf prints a message above the status line. The caller holds mu.
func (p *Progress) printf(format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	if p.terminal && p.status != "" {
		fmt.Fprintf(p.w, "\r\x1b[2K%s\n%s", msg, p.status)
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *Progress) request(c experiment.Config, rec record.Request) {
	if p.off() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	what := fmt.Sprintf("%s %s #%d", c.Label, rec.Phase, rec.Rep)
	var result string
	if rec.Status != record.StatusOK {
		result = fmt.Sprintf("FAILED (%s): %s", rec.ErrorClass, firstLine(rec.Error))
	} else {
		result = fmt.Sprintf("ttft %s, tpot %s/token, %s tokens", ms(rec.TTFT), ms(rec.TPOTToken), count(rec.OutputTokens))
	}
	if !p.terminal {
		fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.done, p.total, what, result)
		return
	}
	if rec.Status != record.StatusOK {
		p.printf("%s: %s", what, result)
	}
	p.draw(what + ": " + result)
}

// skip counts requests that were recorded without being sent.
func (p *Progress) skip(n int) {
	if p.off() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.terminal {
		p.draw("")
	}
}

// draw redraws the status line. The caller holds mu.
func (p *Progress) draw(last string) {
	const width = 24
	filled := 0
	if p.total > 0 {
		filled = p.done * width / p.total
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	p.status = fmt.Sprintf("[%s] %d/%d  ETA %s  %s", bar, p.done, p.total, p.eta(), last)
	fmt.Fprintf(p.w, "\r\x1b[2K%s", p.status)
}

// eta extrapolates the time left from the pace so far.
func (p *Progress) eta() string {
	if p.done == 0 || p.done >= p.total {
		return "-"
	}
	elapsed := p.now().Sub(p.began)
	left := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
	return left.Round(time.Second).String()
}

func (p *Progress) finish() {
	if p.off() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.status != "" {
		fmt.Fprintln(p.w)
		p.status = ""
	}
	p.printf("%d requests in %s", p.done, p.now().Sub(p.began).Round(time.Millisecond))
}

// writer returns a writer whose lines are printed as notes, for the engine's boot progress.
func (p *Progress) writer() io.Writer {
	if p.off() {
		return nil
	}
	return lineWriter{p}
}

type lineWriter struct{ p *Progress }

func (l lineWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		l.p.note("  %s", line)
	}
	return len(b), nil
}

func ms(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(*d)/float64(time.Millisecond))
}

func count(n *int) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
