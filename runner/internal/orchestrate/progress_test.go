package orchestrate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// hostileText is what a hostile or broken server might answer with: clear the screen, set the
// window title, colour the text, a C1 control sequence introducer, a carriage return that would
// overwrite the line, and DEL.
const hostileText = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\rover\x7f"

// TestProgressEscapesServerText checks that text from a server (an error body, a log line, the
// model it names) reaches the terminal with its control characters visible, on a terminal and
// in a log: the only escape sequences in the output are the status line's own.
func TestProgressEscapesServerText(t *testing.T) {
	ms := func(f float64) *time.Duration { d := time.Duration(f * float64(time.Millisecond)); return &d }
	cfg := experiment.Config{Label: "label\x1b[8m"}
	events := []Event{
		RunStarted{Requests: 2, Servers: 1},
		BootOutput{ServerID: "s1", Line: "log " + hostileText},
		ServerReady{Server: results.ServerInfo{ServerID: "s1", Model: "m" + hostileText, EngineVersion: "v" + hostileText}},
		RequestMeasured{Config: cfg, Record: record.Request{Phase: record.PhaseMeasure, Status: record.StatusOK,
			TTFT: ms(1), TPOTToken: ms(1), OutputTokens: record.Int(1)}},
		RequestMeasured{Config: cfg, Record: record.Request{Phase: record.PhaseMeasure, Status: record.StatusFailed,
			ErrorClass: record.ErrHTTPStatus, Error: "500: " + hostileText + "\nsecond line"}},
		BootFailed{Server: results.ServerInfo{ServerID: "s2", Engine: "vllm"}, Configs: 1, Err: errors.New("boot: " + hostileText)},
		RunFinished{},
	}
	for _, terminal := range []bool{false, true} {
		var b strings.Builder
		p := NewProgress(&b, terminal)
		p.now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
		for _, e := range events {
			if err := p.Handle(e); err != nil {
				t.Fatalf("Handle(%T): %v", e, err)
			}
		}
		// The status line's own redraw is "\r\x1b[2K"; nothing else may control the terminal.
		out := strings.ReplaceAll(b.String(), "\r\x1b[2K", "")
		if i := strings.IndexFunc(out, func(r rune) bool {
			return r != '\n' && (r < 0x20 || (r >= 0x7f && r <= 0x9f))
		}); i >= 0 {
			t.Errorf("terminal %v: the control character %q reaches the output:\n%q", terminal, out[i], b.String())
		}
		for _, want := range []string{`500: \x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\x0dover\x7f ...`,
			`log \x1b[2J`, `boot: \x1b[2J`, `label\x1b[8m`, `serving model m\x1b[2J`} {
			if !strings.Contains(out, want) {
				t.Errorf("terminal %v: lacks %q:\n%s", terminal, want, out)
			}
		}
	}
}
