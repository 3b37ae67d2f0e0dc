package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
)

// lockedBuf collects output written from several goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// readListening reads the "listening on URL" line a sim prints once its port is open.
func readListening(t *testing.T, r io.Reader) string {
	t.Helper()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: %v (got %q)", err, line)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first stdout line %q, want listening on http://127.0.0.1:PORT", line)
	}
	return url
}

func httpStatus(t *testing.T, method, url string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSimCommand runs `runner sim` in process: it listens on a free port, serves, and stops
// gracefully when its context ends.
func TestSimCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &lockedBuf{}
	done := make(chan error, 1)
	go func() {
		done <- dispatch(ctx, []string{"sim", "org/model", "--port", "0", "--dev-mode", "--max-model-len", "512"}, pw, stderr)
		pw.Close()
	}()
	url := readListening(t, pr)
	go io.Copy(io.Discard, pr)
	if s := httpStatus(t, "GET", url+"/health"); s != 200 {
		t.Errorf("/health: %d", s)
	}
	if s := httpStatus(t, "POST", url+"/reset_prefix_cache"); s != 200 {
		t.Errorf("/reset_prefix_cache in dev mode: %d", s)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"org/model"`) || !strings.Contains(string(b), `"max_model_len":512`) {
		t.Errorf("/v1/models: %s", b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sim returned %v after its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim did not stop within 10s of its context ending")
	}
	for _, w := range []string{"Starting vLLM API server 0 on " + url, "Application startup complete.", "Shutting down"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
}

func TestSimCommandUsage(t *testing.T) {
	cases := [][]string{
		{"sim", "--tokens-per-event", "0"},
		{"sim", "--fault", "explode"},
		{"sim", "a", "b"},
		{"sim", "--jitter", "1.5"},
		{"sim", "--port", "70000"},
		{"sim", "--boot-fail", "segfault"},
		{"sim", "--max-num-seqs", "-1"},
		{"sim", "--decode-per-seq", "-1ms"},
		{"sim", "--max-num-seqs", "8", "--max-num-batched-tokens", "4"},
	}
	for _, args := range cases {
		var stderr bytes.Buffer
		err := dispatch(context.Background(), args, io.Discard, &stderr)
		var ex *exitError
		if !errors.As(err, &ex) || ex.code != 2 {
			t.Errorf("%v: %v, want a usage error (exit 2)", args, err)
		}
	}
	var stderr bytes.Buffer
	if err := dispatch(context.Background(), []string{"sim", "--help"}, io.Discard, &stderr); err != nil {
		t.Errorf("--help: %v", err)
	}
	for _, w := range []string{"--decode-per-token", "--max-num-seqs", "--decode-per-seq", "--max-num-batched-tokens", "X-Sim-Fault", "X-Sim-Stamp", "listening on"} {
		if !strings.Contains(stderr.String(), strings.TrimPrefix(w, "-")) {
			t.Errorf("help lacks %q", w)
		}
	}
}

// buildRunner builds the runner binary once per test run into a temporary directory that
// TestMain removes.
func buildRunner(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the runner binary")
	}
	built.once.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			built.err = errors.New("no go command on PATH")
			return
		}
		if built.dir, err = os.MkdirTemp("", "runner-test-bin-"); err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(built.dir, "runner")
		out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the runner binary that buildRunner made.
var built struct {
	once     sync.Once
	bin, dir string
	err      error
}

func TestMain(m *testing.M) {
	engine.MaybeRunGuard()
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestSimProcess runs `runner sim` as a process, as a supervisor would: it waits for the
// listening line, checks health, sends SIGTERM and expects a clean exit. It then checks a boot
// failure and a crash fault, which end the process with status 1.
func TestSimProcess(t *testing.T) {
	bin := buildRunner(t)

	t.Run("serve and SIGTERM", func(t *testing.T) {
		cmd := exec.Command(bin, "sim", "--port", "0", "--boot-delay", "200ms")
		stdout, _ := cmd.StdoutPipe()
		stderr := &lockedBuf{}
		cmd.Stderr = stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		url := readListening(t, stdout)
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("the port opened after %v, before the 200ms boot delay", d)
		}
		if s := httpStatus(t, "GET", url+"/health"); s != 200 {
			t.Errorf("/health: %d", s)
		}
		if s := httpStatus(t, "POST", url+"/reset_prefix_cache"); s != 404 {
			t.Errorf("/reset_prefix_cache without dev mode: %d, want 404", s)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitExit(t, cmd, 0)
		if !strings.Contains(stderr.String(), "Application shutdown complete.") {
			t.Errorf("stderr lacks the shutdown lines:\n%s", stderr.String())
		}
		// The runner stops its servers with SIGTERM, and this is their log: it must not say
		// that someone pressed Ctrl-C.
		if strings.Contains(stderr.String(), "interrupted") || strings.Contains(stderr.String(), "Ctrl-C") {
			t.Errorf("a SIGTERM is reported as a Ctrl-C:\n%s", stderr.String())
		}
	})

	t.Run("boot failure", func(t *testing.T) {
		cmd := exec.Command(bin, "sim", "--port", "0", "--gpu", "Tesla T4", "--dtype", "bfloat16")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v, want status 1", err)
		}
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), "Bfloat16 is only supported") {
			t.Errorf("stdout %q; stderr:\n%s", stdout.String(), stderr.String())
		}
	})

	t.Run("crash", func(t *testing.T) {
		cmd := exec.Command(bin, "sim", "--port", "0", "--fault", "crash@2")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		url := readListening(t, stdout)
		resp, err := http.Post(url+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"the","max_tokens":8,"stream":true}`))
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil || strings.Contains(string(b), "[DONE]") {
				t.Errorf("the stream ended cleanly (%v): %q", rerr, b)
			}
		}
		waitExit(t, cmd, 1)
	})
}

func waitExit(t *testing.T, cmd *exec.Cmd, want int) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("wait: %v", err)
		}
		if code != want {
			t.Errorf("exit status %d, want %d", code, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit within 10s")
	}
}
