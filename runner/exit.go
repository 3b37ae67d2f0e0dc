package main

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// hardExit holds what must still be done when the runner exits at once on a second signal:
// marking an open result folder interrupted, so that its manifest never says running.
var hardExit exitHooks

// exitHooks is a set of functions run, each within a bound, before a hard exit.
type exitHooks struct {
	mu    sync.Mutex
	next  int
	hooks map[int]func()
}

// add registers f and returns the function that removes it.
func (h *exitHooks) add(f func()) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = f
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// runAll runs every registered function. The functions bound their own time.
func (h *exitHooks) runAll() {
	h.mu.Lock()
	fs := make([]func(), 0, len(h.hooks))
	for _, f := range h.hooks {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// exitError carries the exit status of a failed command out of it, with its cause. Codes: 1 a
// failure (or, for diff, a regression), 2 bad input (usage, an invalid experiment file, an
// unreadable folder), 130 an interrupted run. A nil cause has nothing more to say: the usage or
// the problem is already on stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Unwrap returns the cause.
func (e *exitError) Unwrap() error { return e.err }

// errorLines is a list of problems that stderr shows one after another, each as errorText
// shows it alone.
type errorLines []error

func (l errorLines) Error() string { return errors.Join(l...).Error() }

// Unwrap returns the problems.
func (l errorLines) Unwrap() []error { return l }

// usageError is an error of the command line itself; it exits with status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// prefixed puts the runner's name before a message of its own on stderr. It is the one place
// that writes it.
func prefixed(msg string) string { return "runner: " + msg }

// warnf writes a message of the runner's own, such as a note about its input, as a line on
// stderr.
func warnf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintln(stderr, tabular.VisibleLines(prefixed(fmt.Sprintf(format, args...))))
}
