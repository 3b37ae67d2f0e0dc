// Command runner measures LLM serving latency the way a chat user feels it: it expands an
// experiment file into configs, boots an inference server per server config, sends repeated
// streaming requests, and writes a versioned result folder of CSV files.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
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
			fmt.Fprintln(os.Stderr, "\nrunner: interrupted; stopping (press Ctrl-C again to exit now)")
		case syscall.SIGHUP:
			fmt.Fprintln(os.Stderr, "\nrunner: the terminal hung up; stopping (a second signal exits now)")
		default:
			// Not a Ctrl-C: a CI job being cancelled, or, for runner sim, the runner stopping
			// its server, whose log this is.
			fmt.Fprintln(os.Stderr, "runner: received SIGTERM; stopping (a second signal exits now)")
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
		fmt.Fprintln(os.Stderr, "runner: exiting now")
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

// exitCode reports err on stderr and maps it to the process exit status.
func exitCode(err error, stderr *os.File) int {
	if err == nil {
		return 0
	}
	var ex *exitError
	if errors.As(err, &ex) {
		if ex.msg != "" {
			fmt.Fprintln(stderr, ex.msg)
		}
		return ex.code
	}
	fmt.Fprintf(stderr, "runner: %v\n", err)
	return 1
}
