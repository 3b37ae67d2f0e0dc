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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/tabular"
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
		hardExit.runAll()
		os.Exit(130)
	}()
	// A write to a broken stdout or stderr pipe (`runner run x.yaml | head -1`, once head has
	// its line) kills a Go program with SIGPIPE unless the program asks for SIGPIPE with
	// Notify: then the write returns EPIPE instead (os/signal, "SIGPIPE"; Ignore does not
	// have this effect on fd 1 and 2). The run then goes on with stdout's output dropped, so
	// that its folder is finished and its servers are stopped as in any other run. The
	// channel is never read: a signal that finds it full is dropped, which is all it needs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stdout := &closableStdout{w: os.Stdout, stderr: os.Stderr}
	err := dispatch(ctx, os.Args[1:], stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// closableStdout passes writes on to w until one fails because its reader has gone (EPIPE);
// from then on it drops them and reports success, so that a summary nobody can read does not
// fail a run whose folder holds the results. The first such write says so on stderr.
type closableStdout struct {
	mu     sync.Mutex
	w      io.Writer
	stderr io.Writer
	closed bool
}

// Write writes p to the standard output, or drops it once that is a closed pipe.
func (c *closableStdout) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return len(p), nil
	}
	n, err := c.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		c.closed = true
		fmt.Fprintln(c.stderr, prefixed("the standard output is closed; what it would show is dropped (the result folder is written)"))
		return len(p), nil
	}
	return n, err
}

// duplicateSignal is how soon after a first SIGTERM a second one is taken for the same request
// to stop, delivered twice.
const duplicateSignal = time.Second

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
		// An error may quote a server (its answer, its log's tail): its control characters are
		// shown, not sent to the terminal.
		fmt.Fprintln(stderr, tabular.VisibleLines(text))
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
