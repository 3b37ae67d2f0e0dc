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
		hardExit.runAll()
		os.Exit(130)
	}()
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
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
