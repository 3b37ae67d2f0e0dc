package report

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// browserCheck is the folder of the CI's browser check, from this package's folder.
var browserCheck = filepath.Join("..", "..", "..", ".ci", "browser")

// needBrowser returns the check script, or skips the test when what it needs is not installed:
// node, Chromium and the check's npm packages. With RUNNER_REQUIRE_BROWSER=1 (as CI sets) a
// missing piece fails the test instead.
func needBrowser(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium: not in -short")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("RUNNER_REQUIRE_BROWSER") == "1" {
			t.Fatalf("RUNNER_REQUIRE_BROWSER=1 but %s", msg)
		}
		t.Skipf("%s; the report is not opened in a browser", msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("no node on the PATH")
	}
	found := os.Getenv("CHROMIUM") != ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			found = true
		}
	}
	if !found {
		missing("no chromium on the PATH (apt-get install chromium)")
	}
	if _, err := os.Stat(filepath.Join(browserCheck, "node_modules", "puppeteer-core")); err != nil {
		missing("the browser check's packages are not installed (cd .ci/browser && npm ci)")
	}
	script, err := filepath.Abs(filepath.Join(browserCheck, "check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// runCheck opens page with the browser check and returns its output and whether it passed.
func runCheck(t *testing.T, script, page string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, page)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("node %s %s: %v\n%s", script, page, err, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("node %s %s: no answer within the limit\n%s", script, page, out)
	}
	if exit != nil && exit.ExitCode() != 1 {
		t.Fatalf("node %s %s: exit %d, want 0 or 1 (a failed check)\n%s", script, page, exit.ExitCode(), out)
	}
	return string(out), err == nil
}

// TestReportInBrowser opens reports in headless Chromium with the CI's check (every chart
// rendered, no console error, no request to the network) and checks that the check fails a
// page with a console error, a broken image and a request to a server on the network.
func TestReportInBrowser(t *testing.T) {
	script := needBrowser(t)

	// A server on the network: the faulty page asks it for something, and the request must
	// never reach it.
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	bad, err := os.ReadFile(filepath.Join(browserCheck, "testdata", "bad.html"))
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name  string
		page  func(t *testing.T) string
		ok    bool
		wants []string // lines the check must print
	}{
		{
			name: "report with server phases",
			page: func(t *testing.T) string {
				f := load(t, filepath.Join("testdata", "new"))[0]
				for i := range f.Requests {
					timeRequest(&f.Requests[i])
				}
				res, err := Write(outDir(t, "browser-one"), f)
				if err != nil {
					t.Fatal(err)
				}
				return filepath.Join(res.Dir, IndexFile)
			},
			ok: true,
			// Eight charts inline, each linked as PNG and SVG.
			wants: []string{"8 graphics rendered (8 inline svg), 16 linked chart files loaded", "no console error"},
		},
		{
			name: "comparison",
			page: func(t *testing.T) string {
				res, err := Write(outDir(t, "browser-compare"), load(t, filepath.Join("testdata", "old"), filepath.Join("testdata", "new"))...)
				if err != nil {
					t.Fatal(err)
				}
				return filepath.Join(res.Dir, IndexFile)
			},
			ok:    true,
			wants: []string{"7 graphics rendered (7 inline svg), 14 linked chart files loaded", "no console error"},
		},
		{
			name: "faulty page",
			page: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "bad.html")
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(bad), "PORT", fmt.Sprint(port))), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			},
			wants: []string{
				"console error: fixture: an error in the console",
				"chart not rendered: <img> missing.png: the image did not load",
				fmt.Sprintf("network request: GET http://127.0.0.1:%d/leak (aborted", port),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := runCheck(t, script, tt.page(t))
			if ok != tt.ok {
				t.Errorf("the check passed: %v, want %v\n%s", ok, tt.ok, out)
			}
			for _, w := range tt.wants {
				if !strings.Contains(out, w) {
					t.Errorf("the check's output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server on the network got %d requests from the pages, want none", n)
	}
}
