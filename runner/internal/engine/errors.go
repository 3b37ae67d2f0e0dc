package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// BootError is a server that could not be brought up: it exited, timed out, found its port
// taken, rejected an argument, or could not be started at all.
type BootError struct {
	Engine   string   // the engine name, e.g. vllm
	Reason   string   // what went wrong, e.g. "exited with status 1 before it was ready"
	Hint     string   // what to change, when the failure is a known one; else empty
	LogTail  []string // the last lines of the server log (secrets redacted)
	ExitCode int      // the server's exit status; -1 when it did not exit by itself or never ran
	Log      string   // where the full log is, when known
	// Argv is the command line the server was (or was to be) started with, secrets redacted;
	// nil for a server the runner does not start (engine: endpoint).
	Argv []string
}

// Error quotes the reason, the hint and the last lines of the log.
func (e *BootError) Error() string {
	return describeFailure(e.Engine+": server failed to boot: "+e.Reason, e.Hint, e.LogTail, e.Log)
}

// interruptedBoot is a boot that ended because its context did: it wraps the context's error.
type interruptedBoot struct {
	err  error
	argv []string
}

func (e *interruptedBoot) Error() string { return e.err.Error() }

func (e *interruptedBoot) Unwrap() error { return e.err }

// BootArgv returns the command line, secrets redacted, of the server whose boot failed or was
// interrupted with err; nil when err does not say (the server was never to be started, or its
// launch could not even be prepared).
func BootArgv(err error) []string {
	var be *BootError
	if errors.As(err, &be) {
		return append([]string(nil), be.Argv...)
	}
	var ib *interruptedBoot
	if errors.As(err, &ib) {
		return append([]string(nil), ib.argv...)
	}
	return nil
}

// ExitError is a server that exited while it was serving, without being asked to stop.
type ExitError struct {
	Engine   string
	Status   string // e.g. "status 1", "signal killed"
	ExitCode int    // -1 when a signal ended it
	Hint     string
	LogTail  []string
	Log      string
}

// Error quotes the exit status, the hint and the last lines of the log.
func (e *ExitError) Error() string {
	return describeFailure(e.Engine+": server exited unexpectedly with "+e.Status, e.Hint, e.LogTail, e.Log)
}

// quotedTail is how many log lines an error message quotes.
const quotedTail = 20

func describeFailure(head, hint string, tail []string, log string) string {
	var b strings.Builder
	b.WriteString(head)
	if hint != "" {
		b.WriteString("\nhint: ")
		b.WriteString(hint)
	}
	if len(tail) > quotedTail {
		tail = tail[len(tail)-quotedTail:]
	}
	if len(tail) > 0 {
		fmt.Fprintf(&b, "\nlast %d lines of the server log", len(tail))
		if log != "" {
			fmt.Fprintf(&b, " (%s)", log)
		}
		b.WriteString(":")
		b.WriteString(quoteLines(tail))
	}
	return b.String()
}

// bootFailure is a failed readiness wait, before it becomes a BootError.
type bootFailure struct {
	reason string
	hint   string
	exited bool
}

func (f *bootFailure) Error() string { return f.reason }

// bootFailed ends the server's process group and turns err into the error Start returns.
func (s *Server) bootFailed(err error) error {
	s.Stop(context.Background())
	var f *bootFailure
	if !errors.As(err, &f) {
		return &interruptedBoot{err: fmt.Errorf("%s: boot interrupted: %w", s.engine, err), argv: s.Argv()}
	}
	be := &BootError{Engine: s.engine, Reason: f.reason, Hint: f.hint, LogTail: s.log.lines(), ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
	if f.exited {
		be.Reason = fmt.Sprintf("exited with %s before it was ready", s.exitStatus())
		be.ExitCode = s.ExitCode()
	}
	if h := s.log.hints.hint(); h != "" {
		be.Hint = h
	} else if f.exited && be.ExitCode == 0 {
		be.Hint = exitZeroHint(s.engine, s.launch.Argv)
	}
	return be
}

// exitZeroHint says what to do about a server that exited with status 0 before it was ready:
// it ran and ended as if asked to. vLLM deprecated `python -m vllm.entrypoints.openai.api_server`
// for `vllm serve`, and in recent trees the module no longer starts a server when run with -m
// (vllm/entrypoints/openai/api_server.py keeps its functions for `vllm serve`).
func exitZeroHint(engine string, argv []string) string {
	if engine == "vllm" && slices.Contains(argv, "vllm.entrypoints.openai.api_server") {
		return "python -m vllm.entrypoints.openai.api_server exited at once with status 0: this vLLM release no longer starts a server that way; remove server.entrypoint (the default is vllm serve)"
	}
	return "the server ended by itself with status 0 before it answered: check that its command line starts a server that stays up (a --help or --version in it, a wrapper that forks and exits)"
}
