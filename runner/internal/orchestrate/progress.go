package orchestrate

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Progress reports a run's progress on a writer, normally stderr: it is a Subscriber to the
// run's events. On a terminal it keeps one status line with a bar and an ETA at the bottom,
// redrawn in place, and prints notes above it; elsewhere (a CI log, a file) it prints one plain
// line per request. A nil *Progress reports nothing.
type Progress struct {
	w        io.Writer
	terminal bool
	quiet    bool // report problems only
	now      func() time.Time
	width    func() int // the terminal's columns, 0 when unknown

	mu     sync.Mutex
	total  int
	done   int
	began  time.Time
	status string // the status line currently drawn, terminal only
}

// NewProgress returns a Progress writing to w; terminal says whether w is a terminal.
func NewProgress(w io.Writer, terminal bool) *Progress {
	return &Progress{w: w, terminal: terminal, now: time.Now}
}

// Width makes the status line of a terminal fit width() columns, asked at every redraw so that
// a resized terminal is followed: a line longer than the terminal would wrap, and redrawing it
// would then leave the wrapped part behind on every update. A width of 0 means unknown, and the
// line is not cut. It returns p.
func (p *Progress) Width(width func() int) *Progress {
	p.width = width
	return p
}

// NewQuietProgress returns a Progress that reports only problems on w: a server that did not
// boot or exited while serving, and requests that cannot be sent, each with its reason.
func NewQuietProgress(w io.Writer) *Progress {
	return &Progress{w: w, quiet: true, now: time.Now}
}

// Handle reports one event of the run. It never fails.
func (p *Progress) Handle(e Event) error {
	switch e := e.(type) {
	case RunStarted:
		p.start(e.Requests, e.Servers)
	case ServerBooting:
		p.server(e)
	case BootOutput:
		p.note("  %s", e.Line)
	case ServerReady:
		p.note("serving model %s%s", e.Server.Model, versionNote(e.Server.EngineVersion))
	case BootFailed:
		if !e.Interrupted {
			p.problem("server %s (%s) failed to boot; its %d configs are recorded as failed:\n%v", e.Server.ServerID, e.Server.Engine, e.Configs, e.Err)
		}
	case ServerExited:
		p.problem("server %s (%s) exited while serving; its remaining requests are recorded as failed:\n%s",
			e.ServerID, engineName(e.Engine), errString(e.Err))
	case ServerUnusable:
		p.problem("%s", e.Reason)
	case StopFailed:
		p.problem("%v", e.Err)
	case ServerMetricsFailed:
		p.problem("server %s: its /metrics failed, so the requests around a failed scrape have no server-side timings (it is tried again after a backoff): %v", e.ServerID, e.Err)
	case ServerNotRecorded:
		p.problem("record server %s: %v", e.ServerID, e.Err)
	case TelemetryFailed:
		p.problem("server %s: %s", e.ServerID, e.Warning)
	case PreparingPrompts:
		how := "counted by the server's /tokenize"
		if e.Calibrated {
			how = "the server has no /tokenize: a few one-token probe requests each, on its own count"
		}
		prompts := "prompts"
		if e.Lengths == 1 {
			prompts = "prompt"
		}
		p.note("preparing %d %s of exact length (%s)", e.Lengths, prompts, how)
	case PromptsPrepared:
		took := e.Took.Round(100 * time.Millisecond)
		if e.Took < time.Second {
			took = e.Took.Round(time.Millisecond)
		}
		p.note("prompts ready after %s", took)
	case Rewarming:
		p.note("resume: warming the new server with %d unrecorded requests (its first request and warm-ups)", e.Requests)
	case LoadPointStarted:
		if !p.off() {
			p.note("load point %s: %d requests, %s", e.Config.Label, e.Requests, describeLoad(e.Config.Load))
		}
	case RequestMeasured:
		p.request(e.Config, e.Record)
	case RequestNotSent:
		p.skip(1)
	case RunFinished:
		p.finish()
	}
	return nil
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
	p.total, p.began = total, p.now()
	p.printf("%d requests to send to %d server config(s)", total, servers)
}

func (p *Progress) server(e ServerBooting) {
	if p.off() {
		return
	}
	what := "booting"
	if !experiment.Boots(e.Server.Engine) {
		what = "connecting to " + e.Server.URL
	}
	p.note("server %d/%d: %s (server id %s, %d configs): %s", e.Index+1, e.Servers, engineName(e.Server.Engine), e.ServerID, e.Configs, what)
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

// printf prints a message above the status line. The caller holds mu. The message's control
// characters are escaped (tabular.VisibleLines): it carries text from servers (log lines,
// errors, the model's name), and an escape sequence there would clear or recolour the terminal.
func (p *Progress) printf(format string, args ...any) {
	msg := tabular.VisibleLines(strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
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
	// One line, whatever the label and the server's error text hold.
	what, result = tabular.Visible(what), tabular.Visible(result)
	if !p.terminal {
		fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.done, p.total, what, result)
		return
	}
	if rec.Status != record.StatusOK {
		p.printf("%s: %s", what, result)
	}
	p.draw(what + ": " + result)
}

// skip counts n requests that were recorded without being sent.
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
	if p.width != nil {
		p.status = fit(p.status, p.width())
	}
	fmt.Fprintf(p.w, "\r\x1b[2K%s", p.status)
}

// fit cuts s to fewer than cols characters, ending it with "…" when it was cut, so that it
// stays on one line of a terminal of cols columns (the last column is left free: some
// terminals wrap as soon as it is written). A cols of 0 or less leaves s as it is.
func fit(s string, cols int) string {
	if cols <= 0 || utf8.RuneCountInString(s) < cols {
		return s
	}
	if cols < 2 {
		return ""
	}
	r := []rune(s)
	return string(r[:cols-2]) + "…"
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

func versionNote(v string) string {
	if v == "" {
		return ""
	}
	return " (engine version " + v + ")"
}

// describeLoad says in words how a load point sends its requests.
func describeLoad(l *experiment.LoadSpec) string {
	switch {
	case l == nil:
		return "one at a time"
	case l.Open():
		s := fmt.Sprintf("open loop at %v requests/s (%s arrivals", l.Rate, l.Arrival)
		if l.Arrival == "gamma" {
			s += fmt.Sprintf(", burstiness %v", l.Burstiness)
		}
		s += ")"
		if l.MaxConcurrency > 0 {
			s += fmt.Sprintf(", at most %d in flight", l.MaxConcurrency)
		}
		return s
	default:
		return fmt.Sprintf("closed loop, %d in flight", l.Concurrency)
	}
}
