package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// eventLog is a subscriber that keeps the names of the events it gets, and fails on the
// events named in fail. A run of one event reads as NAMExN.
type eventLog struct {
	names  []string
	counts []int
	fail   map[string]bool
}

var errRefused = errors.New("refused")

func (l *eventLog) Handle(e Event) error {
	name := reflect.TypeOf(e).Name()
	switch {
	case name == "BootOutput":
		return nil // how many lines the engine prints is its own business
	case l.fail[name]:
		return errRefused
	case len(l.names) > 0 && l.names[len(l.names)-1] == name:
		l.counts[len(l.counts)-1]++
	default:
		l.names = append(l.names, name)
		l.counts = append(l.counts, 1)
	}
	return nil
}

func (l *eventLog) String() string {
	var b strings.Builder
	for i, name := range l.names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		if l.counts[i] > 1 {
			fmt.Fprintf(&b, "x%d", l.counts[i])
		}
	}
	return b.String()
}

// TestRunEvents checks the events of a run, in order, and what happens when a subscriber
// cannot take one: a request or a ready server that cannot be recorded stops the run, and the
// subscribers after the failing one do not see it; a server's end that cannot be recorded is
// reported and the run goes on.
func TestRunEvents(t *testing.T) {
	tests := []struct {
		name    string
		fail    string // the event the first subscriber refuses
		wantErr string
		want    string // the events the second subscriber sees
	}{
		{"all taken", "", "",
			"RunStarted ServerBooting ServerReady PreparingPrompts PromptsPrepared RequestMeasuredx6 ConfigDone RequestMeasuredx3 ConfigDone ServerEnded RunFinished"},
		{"a request refused", "RequestMeasured", "record request",
			"RunStarted ServerBooting ServerReady PreparingPrompts PromptsPrepared ServerEnded"},
		{"a ready server refused", "ServerReady", "refused",
			"RunStarted ServerBooting"},
		{"a server's end refused", "ServerEnded", "",
			"RunStarted ServerBooting ServerReady PreparingPrompts PromptsPrepared RequestMeasuredx6 ConfigDone RequestMeasuredx3 ConfigDone ServerNotRecorded RunFinished"},
	}
	url := startSim(t, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, cfgs := endpointExperiment(t, url, "keep", "sequential")
			first := &eventLog{fail: map[string]bool{tt.fail: true}}
			second := &eventLog{}
			_, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{first, second}})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errRefused)):
				t.Fatalf("Run: %v, want an error with %q wrapping the subscriber's", err, tt.wantErr)
			}
			if got := second.String(); got != tt.want {
				t.Errorf("events\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

// TestRecordNotSent checks that requests recorded without being sent reach the folder, each
// with the reason, and end their configs.
func TestRecordNotSent(t *testing.T) {
	url := startSim(t, false) // no dev mode: cache: reset cannot be done
	e, cfgs := endpointExperiment(t, url, "reset", "sequential")
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	if _, err := Run(context.Background(), Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog,
		Subscribers: []Subscriber{Record(f), events}}); err != nil {
		t.Fatal(err)
	}
	want := "RunStarted ServerBooting ServerReady ServerUnusable RequestNotSentx6 ConfigDone RequestNotSentx3 ConfigDone ServerEnded RunFinished"
	if got := events.String(); got != want {
		t.Errorf("events\n  %s\nwant\n  %s", got, want)
	}
	if n := f.Done().Len(); n != 9 {
		t.Errorf("the folder holds %d requests, want 9", n)
	}
}

// TestProgressLines checks the plain lines the progress display prints for each event, as a
// CI log shows them.
func TestProgressLines(t *testing.T) {
	ms := func(f float64) *time.Duration { d := time.Duration(f * float64(time.Millisecond)); return &d }
	cfg := experiment.Config{Label: "max_tokens=8"}
	ok := record.Request{Phase: record.PhaseMeasure, Rep: 2, Status: record.StatusOK, TTFT: ms(0.93), TPOTToken: ms(5.04), OutputTokens: record.Int(8)}
	failed := record.Request{Phase: record.PhaseWarmup, Status: record.StatusFailed, ErrorClass: record.ErrTruncated, Error: "cut\nmore"}
	info := results.ServerInfo{ServerID: "s1", Engine: "vllm", Model: "m", EngineVersion: "0.9"}
	events := []Event{
		RunStarted{Requests: 4, Servers: 2},
		ServerBooting{Index: 0, Servers: 2, ServerID: "s1", Server: experiment.Server{Engine: "vllm"}, Configs: 2},
		BootOutput{ServerID: "s1", Line: "vllm: ready"},
		ServerReady{Server: info},
		RequestMeasured{Config: cfg, Record: ok},
		RequestMeasured{Config: cfg, Record: failed},
		ServerExited{ServerID: "s1", Engine: "", Err: errors.New("exit status 1")},
		RequestNotSent{Config: cfg},
		ServerEnded{Server: info},
		ServerBooting{Index: 1, Servers: 2, ServerID: "s2", Server: experiment.Server{Engine: "endpoint", URL: "http://h"}, Configs: 1},
		BootFailed{Server: results.ServerInfo{ServerID: "s2", Engine: "endpoint"}, Configs: 1, Err: errors.New("no answer")},
		RequestNotSent{Config: cfg},
		ServerNotRecorded{ServerID: "s2", Err: errors.New("disk full")},
		StopFailed{ServerID: "s2", Err: errors.New("stop: timeout")},
		ServerUnusable{ServerID: "s2", Reason: "prepare prompts: boom"},
		Rewarming{ServerID: "s2", Requests: 3},
		BootFailed{Server: info, Interrupted: true},
		RunFinished{},
	}
	want := `4 requests to send to 2 server config(s)
server 1/2: vllm (server id s1, 2 configs): booting
  vllm: ready
serving model m (engine version 0.9)
[1/4] max_tokens=8 measure #2: ttft 0.9 ms, tpot 5.0 ms/token, 8 tokens
[2/4] max_tokens=8 warmup #0: FAILED (truncated): cut ...
server s1 (vllm) exited while serving; its remaining requests are recorded as failed:
exit status 1
server 2/2: endpoint (server id s2, 1 configs): connecting to http://h
server s2 (endpoint) failed to boot; its 1 configs are recorded as failed:
no answer
record server s2: disk full
stop: timeout
prepare prompts: boom
resume: warming the new server with 3 unrecorded requests (its first request and warm-ups)
4 requests in 0s
`
	wantQuiet := `server s1 (vllm) exited while serving; its remaining requests are recorded as failed:
exit status 1
server s2 (endpoint) failed to boot; its 1 configs are recorded as failed:
no answer
record server s2: disk full
stop: timeout
prepare prompts: boom
`
	for _, tt := range []struct {
		name string
		new  func(*strings.Builder) *Progress
		want string
	}{
		{"plain", func(b *strings.Builder) *Progress { return NewProgress(b, false) }, want},
		{"quiet", func(b *strings.Builder) *Progress { return NewQuietProgress(b) }, wantQuiet},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			p := tt.new(&b)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p.now = func() time.Time { return now }
			for _, e := range events {
				if err := p.Handle(e); err != nil {
					t.Fatalf("Handle(%T): %v", e, err)
				}
			}
			if b.String() != tt.want {
				t.Errorf("progress\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// BenchmarkProgress measures the display's cost per measured request, in CPU time and in
// bytes written, for a CI log (plain lines) and for a terminal (the redrawn status line).
func BenchmarkProgress(b *testing.B) {
	ms := func(f float64) *time.Duration { d := time.Duration(f * float64(time.Millisecond)); return &d }
	e := RequestMeasured{Config: experiment.Config{Label: "prompt_tokens=256 max_tokens=48"},
		Record: record.Request{Phase: record.PhaseMeasure, Rep: 3, Status: record.StatusOK,
			TTFT: ms(53.2), TPOTToken: ms(5.01), OutputTokens: record.Int(48)}}
	for _, terminal := range []bool{false, true} {
		b.Run(fmt.Sprintf("terminal=%v", terminal), func(b *testing.B) {
			var w countingWriter
			p := NewProgress(&w, terminal)
			p.Handle(RunStarted{Requests: b.N, Servers: 1})
			w.n = 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Handle(e)
			}
			b.ReportMetric(float64(w.n)/float64(b.N), "bytes/request")
		})
	}
}

// TestProgressNarrowTerminal checks that on a terminal the status line never reaches the
// terminal's width, however long a config's label, and follows a resize: a longer line would
// wrap, and every redraw would leave the wrapped part behind.
func TestProgressNarrowTerminal(t *testing.T) {
	cols := 40
	var b strings.Builder
	p := NewProgress(&b, true).Width(func() int { return cols })
	p.Handle(RunStarted{Requests: 3, Servers: 1})
	ms := func(f float64) *time.Duration { d := time.Duration(f * float64(time.Millisecond)); return &d }
	e := RequestMeasured{Config: experiment.Config{Label: "prompt_tokens=256,max_tokens=48,api=chat"},
		Record: record.Request{Phase: record.PhaseMeasure, Rep: 3, Status: record.StatusOK,
			TTFT: ms(53.2), TPOTToken: ms(5.01), OutputTokens: record.Int(48)}}
	for _, c := range []int{40, 12, 200} {
		cols = c
		b.Reset()
		p.Handle(e)
		// A redraw is "\r\x1b[2K" and the status line.
		line := strings.TrimPrefix(b.String(), "\r\x1b[2K")
		if strings.ContainsAny(line, "\r\n") {
			t.Fatalf("cols %d: the redraw %q is more than one line", c, b.String())
		}
		if n := utf8.RuneCountInString(line); n >= c {
			t.Errorf("cols %d: status line of %d characters: %q", c, n, line)
		}
		if c == 200 && strings.Contains(line, "…") {
			t.Errorf("cols 200: the line was cut although it fits: %q", line)
		}
		if c < 200 && !strings.HasSuffix(line, "…") {
			t.Errorf("cols %d: a cut line must say so with …: %q", c, line)
		}
	}
}

func TestFit(t *testing.T) {
	for _, tt := range []struct {
		s    string
		cols int
		want string
	}{
		{"short", 80, "short"},
		{"exactly9!", 10, "exactly9!"},
		{"exactly10!", 10, "exactly1…"},
		{"ünïcödé text", 6, "ünïc…"},
		{"anything", 0, "anything"},
		{"anything", 1, ""},
	} {
		if got := fit(tt.s, tt.cols); got != tt.want {
			t.Errorf("fit(%q, %d) = %q, want %q", tt.s, tt.cols, got, tt.want)
		}
	}
}
