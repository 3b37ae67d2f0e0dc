// Command runner measures LLM serving latency the way a chat user feels it: it expands an
// experiment file into configs, boots an inference server per server config, sends repeated
// streaming requests, and writes a versioned result folder of CSV files.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/experiment"
)

func main() {
	// Started by the engine as the guard of a server, the runner is that guard and nothing else.
	engine.MaybeRunGuard()
	ctx, stop := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	// SIGHUP (the terminal closed) stops gracefully too, so that the folder is marked
	// interrupted and can be resumed.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// The first signal stops gracefully: the run abandons the request in flight (a resume
		// sends it again), stops its server, and marks its folder interrupted. The second exits
		// at once, after marking the folder interrupted; the engine's guard process still stops
		// the server when the runner is gone.
		first := <-sigs
		switch first {
		case os.Interrupt:
			fmt.Fprintln(os.Stderr, "\n"+prefixed("interrupted; stopping (press Ctrl-C again to exit now)"))
		case syscall.SIGHUP:
			fmt.Fprintln(os.Stderr, "\n"+prefixed("the terminal hung up; stopping (a second signal exits now)"))
		default:
			// Not a Ctrl-C: a CI job being cancelled, or, for runner sim, the runner stopping
			// its server, whose log this is.
			warnf(os.Stderr, "received SIGTERM; stopping (a second signal exits now)")
		}
		stop()
		at := time.Now()
		for sig := range sigs {
			// GNU timeout and some CI runners send SIGTERM both to the runner and to its process
			// group, so one request to stop arrives twice at once: that is not a second request.
			if sig == syscall.SIGTERM && first == syscall.SIGTERM && time.Since(at) < duplicateSignal {
				continue
			}
			break
		}
		warnf(os.Stderr, "exiting now")
		hardExit.run()
		os.Exit(130)
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// duplicateSignal is how soon after a first SIGTERM a second one is taken for the same request
// to stop, delivered twice.
const duplicateSignal = time.Second

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

// run runs every registered function. The functions bound their own time.
func (h *exitHooks) run() {
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

// exitCode reports err on stderr and maps it to the process exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	var ex *exitError
	if errors.As(err, &ex) {
		code, err = ex.code, ex.err
	}
	if text := errorText(err); text != "" {
		fmt.Fprintln(stderr, text)
	}
	return code
}

// errorText is what stderr shows of err: its message after the runner's prefix, except that an
// experiment file's problems, located as FILE:LINE:COL, stand alone.
func errorText(err error) string {
	switch e := err.(type) {
	case nil:
		return ""
	case *exitError:
		return errorText(e.err)
	case errorLines:
		lines := make([]string, len(e))
		for i, x := range e {
			lines[i] = errorText(x)
		}
		return strings.Join(lines, "\n")
	case experiment.ErrorList:
		return e.Error()
	}
	return prefixed(err.Error())
}

// prefixed puts the runner's name before a message of its own on stderr. It is the one place
// that writes it.
func prefixed(msg string) string { return "runner: " + msg }

// warnf writes a message of the runner's own, such as a note about its input, as a line on
// stderr.
func warnf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintln(stderr, prefixed(fmt.Sprintf(format, args...)))
}

// version is the runner's version; release builds set it with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// buildInfo returns the version and the VCS revision the binary was built from, if known.
func buildInfo() (ver, commit string) {
	ver = version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return ver, commit
}
