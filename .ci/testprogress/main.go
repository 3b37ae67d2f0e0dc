// Command testprogress reads the events of `go test -json` on stdin and prints a line for each
// package as soon as it finishes, in the order they finish, so that a person watching `make test`
// sees it working: plain `go test ./...` prints packages in the order it lists them, and one slow
// package first holds every line back until it is done. While packages run, a line every
// --every says which are still running and for how long. A failed test's output is printed
// whole, with the package's; a passing test's output is not. The last line counts the tests:
// "N passed, N failed, N skipped". The exit status is 1 when a test or a build failed, or when
// no test ran at all.
//
//	go test -json ./... | go run ./.ci/testprogress [-every 30s]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// pkg is what is known of one package while it runs.
type pkg struct {
	start  time.Time
	output []string            // the package's own output (build errors, panics, the final FAIL)
	tests  map[string][]string // each top-level test's output, kept until it ends
}

// tally follows the run: the packages running, and the tests counted so far.
type tally struct {
	mu                      sync.Mutex
	w                       io.Writer
	module                  string
	running                 map[string]*pkg
	done                    int
	passed, failed, skipped int
	failedPkgs              []string
}

func main() {
	every := flag.Duration("every", 30*time.Second, "how often to say which packages are still running")
	module := flag.String("trim", "github.com/onelayerdown/runner/", "a prefix to trim from package paths")
	flag.Parse()
	t := &tally{w: os.Stdout, module: *module, running: map[string]*pkg{}}
	stop := make(chan struct{})
	go t.heartbeat(*every, stop)
	err := t.read(os.Stdin)
	close(stop)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testprogress: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(t.w, "\n%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
	switch {
	case len(t.failedPkgs) > 0:
		fmt.Fprintf(t.w, "FAIL: %s\n", strings.Join(t.failedPkgs, ", "))
		os.Exit(1)
	case t.passed == 0:
		fmt.Fprintln(t.w, "FAIL: no test ran")
		os.Exit(1)
	}
}

// read handles every event of r. A line that is not JSON (go test prints some build errors
// that way) is printed as it is.
func (t *tally) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			t.mu.Lock()
			fmt.Fprintln(t.w, sc.Text())
			t.mu.Unlock()
			continue
		}
		t.handle(e)
	}
	return sc.Err()
}

func (t *tally) handle(e event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.HasPrefix(e.Action, "build-") {
		// A build's errors (build-output) come before its package's FAIL: print them as
		// they come.
		fmt.Fprint(t.w, e.Output)
		return
	}
	p := t.running[e.Package]
	if p == nil {
		p = &pkg{start: e.Time, tests: map[string][]string{}}
		if p.start.IsZero() {
			p.start = time.Now()
		}
		t.running[e.Package] = p
	}
	name := strings.TrimPrefix(e.Package, t.module)
	if e.Test != "" {
		// Output is kept by top-level test, so that a failed test's shows its subtests' in
		// the order they wrote it; only top-level tests are counted.
		top, _, sub := strings.Cut(e.Test, "/")
		switch e.Action {
		case "output":
			p.tests[top] = append(p.tests[top], e.Output)
		case "pass":
			if !sub {
				t.passed++
				delete(p.tests, top)
			}
		case "skip":
			if !sub {
				t.skipped++
				delete(p.tests, top)
			}
		case "fail":
			if !sub {
				t.failed++
				fmt.Fprintf(t.w, "--- FAIL %s %s (%.1fs)\n%s", name, e.Test, e.Elapsed, strings.Join(p.tests[top], ""))
				delete(p.tests, top)
			}
		}
		return
	}
	switch e.Action {
	case "output":
		p.output = append(p.output, e.Output)
	case "pass", "skip", "fail":
		delete(t.running, e.Package)
		t.done++
		word := map[string]string{"pass": "ok  ", "skip": "none", "fail": "FAIL"}[e.Action]
		if e.Action == "skip" {
			// A package without test files: nothing to say.
			return
		}
		fmt.Fprintf(t.w, "%s %-40s %6.1fs   (%d packages done, %d running)\n", word, name, e.Elapsed, t.done, len(t.running))
		if e.Action == "fail" {
			t.failedPkgs = append(t.failedPkgs, name)
			// A test still running when its package failed (a timeout, an os.Exit in a test)
			// ended without a fail of its own: its output says why.
			for _, top := range slices.Sorted(maps.Keys(p.tests)) {
				fmt.Fprintf(t.w, "--- unfinished %s %s\n%s", name, top, strings.Join(p.tests[top], ""))
			}
			fmt.Fprint(t.w, strings.Join(p.output, ""))
		}
	}
}

// heartbeat says, every d, which packages are still running, longest first.
func (t *tally) heartbeat(d time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t.mu.Lock()
			var names []string
			for name, p := range t.running {
				names = append(names, fmt.Sprintf("%s (%s)", strings.TrimPrefix(name, t.module), now.Sub(p.start).Round(time.Second)))
			}
			slices.Sort(names)
			if len(names) > 0 {
				fmt.Fprintf(t.w, "     still running: %s\n", strings.Join(names, ", "))
			}
			t.mu.Unlock()
		}
	}
}
