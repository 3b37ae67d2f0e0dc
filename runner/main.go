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
	"syscall"
)

func main() {
	ctx, stop := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	// SIGHUP (the terminal closed) stops gracefully too, so that the folder is marked
	// interrupted and can be resumed.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// The first signal stops gracefully: the run abandons the request in flight (a resume
		// sends it again), stops its server, and marks its folder interrupted. The second exits
		// at once; the engine's guard process still stops the server when the runner is gone.
		switch sig := <-sigs; sig {
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
		<-sigs
		fmt.Fprintln(os.Stderr, "runner: exiting now")
		os.Exit(130)
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
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
