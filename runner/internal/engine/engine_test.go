package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// testGrace is the stop grace period of the tests whose fake server exits on SIGTERM: a
// safety net only, since Stop returns as soon as the group is gone. A program built with the
// race detector takes about a second to exit, more on a busy machine, and a server killed
// after the grace makes Stop report an error.
const testGrace = 30 * time.Second

// start starts srv with test options and stops it at the end of the test.
func start(t *testing.T, srv experiment.Server, opts StartOptions) (*Server, *syncBuffer, error) {
	t.Helper()
	log := &syncBuffer{}
	if opts.Log == nil {
		opts.Log = log
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = testGrace
	}
	if srv.ReadyTimeout == 0 {
		srv.ReadyTimeout = 20 * time.Second
	}
	s, err := Start(context.Background(), srv, opts)
	if s != nil {
		t.Cleanup(func() {
			if err := s.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
	return s, log, err
}

func TestPresetCommandLines(t *testing.T) {
	t.Parallel()
	type want struct {
		argv     []string // with P for the port
		model    string
		version  string
		canReset bool
	}
	cases := []struct {
		name  string
		stand string // the stand-in executable the preset runs
		srv   experiment.Server
		want  want
	}{
		{
			name: "vllm serve", stand: "vllm",
			srv: experiment.Server{Engine: "vllm", Model: "facebook/opt-125m", Dtype: "half", MaxModelLen: 1024,
				Args: []string{"--gpu-memory-utilization", "0.5"}},
			want: want{
				argv: []string{"vllm", "serve", "facebook/opt-125m", "--dtype", "half", "--max-model-len", "1024",
					"--host", "127.0.0.1", "--port", "P", "--gpu-memory-utilization", "0.5"},
				model: "facebook/opt-125m", version: "0.0.0-fake", canReset: true,
			},
		},
		{
			name: "default engine is vllm", stand: "vllm",
			srv: experiment.Server{Model: "m"},
			want: want{argv: []string{"vllm", "serve", "m", "--host", "127.0.0.1", "--port", "P"},
				model: "m", version: "0.0.0-fake", canReset: true},
		},
		{
			name: "vllm api_server entrypoint", stand: "python",
			srv: experiment.Server{Engine: "vllm", Entrypoint: "api_server", Model: "Qwen/Qwen2.5-0.5B-Instruct", Dtype: "half", MaxModelLen: 2048},
			want: want{
				argv: []string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-0.5B-Instruct",
					"--dtype", "half", "--max-model-len", "2048", "--host", "127.0.0.1", "--port", "P"},
				model: "Qwen/Qwen2.5-0.5B-Instruct", version: "0.0.0-fake", canReset: true,
			},
		},
		{
			name: "vllm without dev mode cannot reset its cache", stand: "vllm",
			srv: experiment.Server{Engine: "vllm", Model: "m", Env: map[string]string{"VLLM_SERVER_DEV_MODE": "0"}},
			want: want{argv: []string{"vllm", "serve", "m", "--host", "127.0.0.1", "--port", "P"},
				model: "m", version: "0.0.0-fake", canReset: false},
		},
		{
			name: "vllm served under another name", stand: "vllm",
			srv: experiment.Server{Engine: "vllm", Model: "/models/opt", Args: []string{"--served-model-name", "opt"},
				Env: map[string]string{"FAKE_MODEL": "opt"}},
			want: want{argv: []string{"vllm", "serve", "/models/opt", "--host", "127.0.0.1", "--port", "P", "--served-model-name", "opt"},
				model: "opt", version: "0.0.0-fake", canReset: true},
		},
		{
			name: "sglang", stand: "python",
			srv: experiment.Server{Engine: "sglang", Model: "qwen/qwen2.5-0.5b-instruct", Dtype: "half", MaxModelLen: 2048,
				Args: []string{"--mem-fraction-static", "0.8"}},
			want: want{
				argv: []string{"python", "-m", "sglang.launch_server", "--model-path", "qwen/qwen2.5-0.5b-instruct",
					"--host", "127.0.0.1", "--port", "P", "--dtype", "half", "--context-length", "2048", "--enable-metrics", "--mem-fraction-static", "0.8"},
				model: "qwen/qwen2.5-0.5b-instruct", version: "0.0.0-fake-sglang", canReset: true,
			},
		},
		{
			name: "llama.cpp", stand: "llama-server",
			srv: experiment.Server{Engine: "llamacpp", Model: "/models/tiny.gguf", MaxModelLen: 512, Args: []string{"-np", "1"}},
			want: want{argv: []string{"llama-server", "-m", "/models/tiny.gguf", "--host", "127.0.0.1", "--port", "P", "-c", "512", "--metrics", "-np", "1"},
				model: "/models/tiny.gguf", version: "b0-fake", canReset: false},
		},
		{
			name: "command", stand: "my-server",
			srv: experiment.Server{Engine: "command", Model: "tiny", ReadyPath: "/health",
				Command: []string{"my-server", "--host", "{host}", "--port", "{port}", "--name", "{model}"}, Args: []string{"--threads", "2"}},
			want: want{argv: []string{"my-server", "--host", "127.0.0.1", "--port", "P", "--name", "tiny", "--threads", "2"},
				model: "tiny", version: "", canReset: false},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, c.stand)
			srv := c.srv
			env := f.env()
			for k, v := range srv.Env {
				env[k] = v
			}
			srv.Env = env
			s, _, err := start(t, srv, StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			port := strconv.Itoa(s.Port())
			want := make([]string, len(c.want.argv))
			for i, a := range c.want.argv {
				want[i] = strings.ReplaceAll(a, "P", port)
			}
			if got := s.Argv(); !reflect.DeepEqual(got, want) {
				t.Errorf("Argv() = %q\nwant      %q", got, want)
			}
			// The stand-in records its own path as $0, then the arguments it was given.
			rec := f.argv(t, c.stand)
			if len(rec) == 0 || filepath.Base(rec[0]) != c.stand || !reflect.DeepEqual(rec[1:], want[1:]) {
				t.Errorf("the server ran as %q\nwant            %q", rec, want)
			}
			if s.Model() != c.want.model || s.Version() != c.want.version || s.CanResetCache() != c.want.canReset {
				t.Errorf("model %q, version %q, can reset %v; want %q, %q, %v",
					s.Model(), s.Version(), s.CanResetCache(), c.want.model, c.want.version, c.want.canReset)
			}
			if s.BaseURL() != "http://127.0.0.1:"+port {
				t.Errorf("BaseURL() = %q", s.BaseURL())
			}
			if c.want.canReset {
				if err := s.ResetCache(context.Background()); err != nil {
					t.Errorf("ResetCache: %v", err)
				}
			} else if err := s.ResetCache(context.Background()); err == nil {
				t.Error("ResetCache succeeded on a server without a reset")
			}
		})
	}
}

func TestEveryExperimentEngineHasAPreset(t *testing.T) {
	t.Parallel()
	for _, name := range experiment.Engines {
		if _, err := lookup(name); err != nil {
			t.Errorf("engine %q of the experiment format: %v", name, err)
		}
	}
}

// TestCacheResetAgreesWithExperiment checks that the engines the experiment format lets use
// cache: reset are exactly those whose preset has a way to empty the prefix cache.
func TestCacheResetAgreesWithExperiment(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(OllamaEnv, self) // any executable: the ollama preset only looks it up
	target := Target{Host: "127.0.0.1", Port: 1, Executable: self, Dir: t.TempDir()}
	for _, name := range experiment.Engines {
		preset, err := lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		srv := experiment.Server{Engine: name, Model: "m", Command: []string{"srv", "{port}"}, URL: "http://127.0.0.1:1"}
		l, err := preset(srv, target)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if has := l.ResetPath != "" || l.Reset != nil; has != experiment.CanResetCache(name) {
			t.Errorf("engine %s: the preset has a reset: %v; the experiment format says it can reset: %v", name, has, experiment.CanResetCache(name))
		}
	}
}

func TestVLLMSetsDevMode(t *testing.T) {
	t.Parallel()
	l, err := vllmPreset(experiment.Server{Model: "m"}, Target{Host: "127.0.0.1", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.Env["VLLM_SERVER_DEV_MODE"] != "1" || l.ResetPath != "/reset_prefix_cache" {
		t.Errorf("env %v, reset path %q", l.Env, l.ResetPath)
	}
	if !reflect.DeepEqual(l.ReadyPaths, []string{"/health", "/v1/models"}) || l.VersionPath != "/version" {
		t.Errorf("ready paths %q, version path %q", l.ReadyPaths, l.VersionPath)
	}
}

func TestSimRunsTheRunnerItself(t *testing.T) {
	t.Parallel()
	f := newFake(t, "runner")
	exe := filepath.Join(f.dir, "runner")
	srv := experiment.Server{Engine: "sim", Model: "sim-model", MaxModelLen: 512, Args: []string{"--seed", "7"}, Env: f.env()}
	s, _, err := start(t, srv, StartOptions{Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(s.Port())
	want := []string{exe, "sim", "--host", "127.0.0.1", "--port", port, "--model", "sim-model", "--max-model-len", "512", "--seed", "7"}
	if got := f.argv(t, "runner"); !reflect.DeepEqual(got, want) {
		t.Errorf("sim ran as %q, want %q", got, want)
	}
	if s.Model() != "sim-model" || !s.CanResetCache() || s.Version() != "0.0.0-fake" {
		t.Errorf("model %q, can reset %v, version %q", s.Model(), s.CanResetCache(), s.Version())
	}
}

func TestReadinessWaitsUntilHealthy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stand string
		srv         experiment.Server
		env         []string
		min         time.Duration
	}{
		{"vllm health 503 while loading", "vllm", experiment.Server{Engine: "vllm", Model: "m"},
			[]string{"FAKE_READY_AFTER", "700ms"}, 700 * time.Millisecond},
		{"llama-server health 503 while loading", "llama-server", experiment.Server{Engine: "llamacpp", Model: "/m.gguf"},
			[]string{"FAKE_READY_AFTER", "700ms"}, 700 * time.Millisecond},
		{"sglang port closed, then 503", "python", experiment.Server{Engine: "sglang", Model: "m"},
			[]string{"FAKE_LISTEN_AFTER", "400ms", "FAKE_READY_AFTER", "800ms"}, 800 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, c.stand)
			srv := c.srv
			srv.Env = f.env(c.env...)
			var progress syncBuffer
			s, log, err := start(t, srv, StartOptions{Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			// The fake refuses to be healthy before c.min has passed since it started, so a
			// server reported ready earlier was not really waited for.
			if s.BootTime() < c.min {
				t.Errorf("BootTime() = %s, before the server could be healthy (%s)", s.BootTime(), c.min)
			}
			if !strings.Contains(log.String(), "fake: /health 503") {
				t.Errorf("the runner never saw /health answer 503; log:\n%s", log)
			}
			if !strings.Contains(progress.String(), "waiting for "+s.BaseURL()+"/health") {
				t.Errorf("progress does not say what it waits for:\n%s", progress.String())
			}
		})
	}
}

// TestHintsGolden derives the hint of every boot log under testdata/boot.
func TestHintsGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/boot/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no boot logs: %v", err)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		lines := readLines(t, f)
		engine := strings.SplitN(filepath.Base(f), "_", 2)[0]
		fmt.Fprintf(&b, "%s: %s\n", filepath.Base(f), HintFor(engine, "127.0.0.1", 8000, lines))
	}
	golden := "testdata/boot/hints.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("hints differ from %s (run with -update after checking them):\n%s", golden, b.String())
	}
}

func TestHints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		want []string // substrings of the hint; none: no hint
	}{
		{"vllm_bf16_t4.log", []string{"Tesla T4, compute capability 7.5", "no bf16", "set server.dtype: half"}},
		{"vllm_bf16_v100_compose.log", []string{"Tesla V100-SXM2-16GB, compute capability 7.0", "set server.dtype: half"}},
		{"vllm_bf16_wrapped.log", []string{"Tesla T4", "set server.dtype: half"}},
		{"sim_bf16.log", []string{"Tesla T4, compute capability 7.5", "set server.dtype: half"}},
		{"vllm_kv_cache_v0.log", []string{"lower server.max_model_len to at most 7344", "32768"}},
		{"vllm_kv_cache_v1.log", []string{"lower server.max_model_len to at most 34736", "262144"}},
		{"vllm_kv_cache_v1_plain.log", []string{"lower server.max_model_len to at most 5632"}},
		{"vllm_kv_cache_v1_no_estimate.log", []string{"cannot hold one request of max_model_len 32768", "4.00 GiB", "0.02 GiB", "lower server.max_model_len", "--gpu-memory-utilization"}},
		{"vllm_free_memory.log", []string{"only 5.12 of 22.05 GiB", "--gpu-memory-utilization 0.9", "to at most 0.23 in server.args"}},
		{"vllm_oom_t4.log", []string{"ran out of memory", "lower gpu memory use", "smaller model"}},
		{"sglang_oom.log", []string{"ran out of memory"}},
		{"vllm_port_in_use.log", []string{"port 8000 on 127.0.0.1 is taken", "server.port: 0"}},
		{"llamacpp_port_in_use.log", []string{"port 8000 on 127.0.0.1 is taken"}},
		{"vllm_unknown_arg.log", []string{"--max-num-seqz 8", "server.args"}},
		{"vllm_invalid_choice.log", []string{"--dtype", "invalid choice: 'bf16'", "fix server.dtype"}},
		{"llamacpp_unknown_arg.log", []string{"--context", "server.args"}},
		{"vllm_ready.log", nil},
		{"vllm_t4_xformers.log", nil},
	}
	for _, c := range cases {
		got := HintFor("vllm", "127.0.0.1", 8000, readLines(t, filepath.Join("testdata/boot", c.file)))
		if len(c.want) == 0 && got != "" {
			t.Errorf("%s: hint %q, want none", c.file, got)
		}
		if len(c.want) > 0 && got == "" {
			t.Errorf("%s: no hint", c.file)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", c.file, got, w)
			}
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestBootFailureQuotesLogAndHint(t *testing.T) {
	t.Parallel()
	cases := []struct{ file, stand string }{
		{"vllm_bf16_t4.log", "vllm"},
		{"vllm_kv_cache_v1.log", "vllm"},
		{"vllm_oom_t4.log", "vllm"},
		{"vllm_unknown_arg.log", "vllm"},
		{"llamacpp_unknown_arg.log", "llama-server"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, c.stand)
			logFile, err := filepath.Abs(filepath.Join("testdata/boot", c.file))
			if err != nil {
				t.Fatal(err)
			}
			srv := experiment.Server{Engine: "vllm", Model: "m", Env: f.env("FAKE_LOG", logFile, "FAKE_EXIT", "1")}
			if c.stand == "llama-server" {
				srv.Engine = "llamacpp"
			}
			_, log, err := start(t, srv, StartOptions{LogName: "server.log"})
			var be *BootError
			if !errors.As(err, &be) {
				t.Fatalf("Start: %v, want a *BootError", err)
			}
			lines := readLines(t, logFile)
			if be.ExitCode != 1 || !strings.Contains(be.Reason, "exited with status 1") {
				t.Errorf("exit code %d, reason %q", be.ExitCode, be.Reason)
			}
			wantHint := HintFor(srv.Engine, "127.0.0.1", 0, lines)
			if be.Hint == "" || be.Hint != wantHint {
				t.Errorf("hint %q, want %q", be.Hint, wantHint)
			}
			last := lines[len(lines)-1]
			if n := len(be.LogTail); n == 0 || be.LogTail[n-1] != last {
				t.Errorf("log tail %q does not end with %q", be.LogTail, last)
			}
			msg := err.Error()
			for _, w := range []string{"failed to boot", "hint: " + be.Hint, "| " + last, "server.log"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if !strings.Contains(log.String(), last) {
				t.Errorf("the server log lacks the server's output")
			}
		})
	}
}

func TestBootTimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	// The ready timeout runs from the start of the process, so it is long enough for a fake
	// built with the race detector to start and answer 503 on a busy machine: the reason
	// must quote what the server last said, not a refused connection.
	srv := experiment.Server{Model: "m", ReadyTimeout: 5 * time.Second, Env: f.env("FAKE_READY_AFTER", "1h", "FAKE_GRANDCHILD", "1")}
	_, _, err := start(t, srv, StartOptions{})
	var be *BootError
	if !errors.As(err, &be) {
		t.Fatalf("Start: %v, want a *BootError", err)
	}
	if !strings.Contains(be.Reason, "not ready after 5s") || !strings.Contains(be.Reason, "503") ||
		!strings.Contains(be.Hint, "server.ready_timeout") {
		t.Errorf("reason %q, hint %q", be.Reason, be.Hint)
	}
	pid, pgid, grandchild := f.procs(t)
	assertGone(t, pgid, pid, grandchild)
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // after the parallel subtests
	held := ln.Addr().(*net.TCPAddr).Port

	t.Run("port set in the experiment", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, "vllm")
		_, _, err := start(t, experiment.Server{Model: "m", Port: held, Env: f.env()}, StartOptions{})
		var be *BootError
		if !errors.As(err, &be) {
			t.Fatalf("Start: %v, want a *BootError", err)
		}
		if !strings.Contains(be.Reason, "already in use") || !strings.Contains(be.Hint, fmt.Sprintf("port %d on 127.0.0.1 is taken", held)) {
			t.Errorf("reason %q, hint %q", be.Reason, be.Hint)
		}
		if f.argv(t, "vllm") != nil {
			t.Error("the server was started although its port was taken")
		}
	})
	t.Run("port taken after it was picked", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, "vllm")
		_, _, err := start(t, experiment.Server{Model: "m", Env: f.env("FAKE_BIND", strconv.Itoa(held))}, StartOptions{})
		var be *BootError
		if !errors.As(err, &be) {
			t.Fatalf("Start: %v, want a *BootError", err)
		}
		if !strings.Contains(be.Hint, "is taken by another process") || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("error without the port hint or the server's message:\n%v", err)
		}
	})
}

func TestStopEndsTheWholeGroup(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	s, log, err := start(t, experiment.Server{Model: "m", Env: f.env("FAKE_GRANDCHILD", "1")}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, pgid, grandchild := f.procs(t)
	if pgid != s.PID() || !alive(pid) || !alive(grandchild) {
		t.Fatalf("pgid %d (PID() %d), server alive %v, grandchild alive %v", pgid, s.PID(), alive(pid), alive(grandchild))
	}
	if s.Exited() {
		t.Fatal("Exited() before Stop")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Stop returns once the group is gone: no waiting here.
	if left := groupMembers(pgid); len(left) > 0 || alive(pid) || alive(grandchild) {
		t.Errorf("after Stop: group members %v, server alive %v, grandchild alive %v", left, alive(pid), alive(grandchild))
	}
	if !s.Exited() || s.Err() != nil {
		t.Errorf("Exited() %v, Err() %v after Stop", s.Exited(), s.Err())
	}
	if err := portFree("127.0.0.1", s.Port()); err != nil {
		t.Errorf("port not free after Stop: %v", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if !strings.Contains(log.String(), "fake: SIGTERM, shutting down") {
		t.Errorf("the server did not get SIGTERM first; log:\n%s", log)
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
	}{
		{"server ignores SIGTERM", []string{"FAKE_IGNORE_TERM", "1", "FAKE_GRANDCHILD", "1"}},
		{"grandchild ignores SIGTERM", []string{"FAKE_GRANDCHILD", "ignore"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, "vllm")
			s, err := Start(context.Background(), experiment.Server{Model: "m", Env: f.env(c.env...)},
				StartOptions{StopGrace: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			pid, pgid, grandchild := f.procs(t)
			err = s.Stop(context.Background())
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Errorf("Stop: %v, want an error saying it had to kill", err)
			}
			if left := groupMembers(pgid); len(left) > 0 || alive(pid) || alive(grandchild) {
				t.Errorf("after Stop: group members %v, server alive %v, grandchild alive %v", left, alive(pid), alive(grandchild))
			}
		})
	}
}

func TestContextCancelStopsTheServer(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, experiment.Server{Model: "m", Env: f.env("FAKE_GRANDCHILD", "1")}, StartOptions{StopGrace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	pid, pgid, grandchild := f.procs(t)
	cancel()
	select {
	case <-s.Done():
	case <-time.After(time.Minute): // a safety net: the stop takes a second or two
		t.Fatal("the server still runs a minute after its context was cancelled")
	}
	assertGone(t, pgid, pid, grandchild)
	if err := s.Err(); err != nil {
		t.Errorf("Err() = %v after a requested stop", err)
	}
}

// TestServerOutlivesTheStartingThread starts a server from a goroutine locked to its thread
// that then ends, which ends the thread. Pdeathsig is tied to the thread that forks, so a
// server started on that thread would be signalled then, although the runner lives on.
func TestServerOutlivesTheStartingThread(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	type result struct {
		s   *Server
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		s, err := Start(context.Background(), experiment.Server{Model: "m", Env: f.env()}, StartOptions{StopGrace: testGrace})
		ch <- result{s, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	pid, _, _ := f.procs(t)
	time.Sleep(700 * time.Millisecond) // longer than the guard's 500 ms check of its parent
	if r.s.Exited() || !alive(pid) {
		t.Errorf("the server died with the thread that started it: exited %v, err %v", r.s.Exited(), r.s.Err())
	}
	if err := r.s.Stop(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestGuardWaitsWhileTheRunnerLives sends the guard alone its parent-death signal, as the kernel
// does when the thread that started it exits, and SIGTERM: with the runner alive, the guard
// must not end the server.
func TestGuardWaitsWhileTheRunnerLives(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	s, _, err := start(t, experiment.Server{Model: "m", Env: f.env()}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := f.procs(t)
	for _, sig := range []syscall.Signal{guardDeathSignal, syscall.SIGTERM} {
		if err := syscall.Kill(s.PID(), sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(700 * time.Millisecond) // longer than the guard's 500 ms check of its parent
	if s.Exited() || !alive(pid) {
		t.Errorf("a SIGTERM to the guard alone ended the server: exited %v, err %v", s.Exited(), s.Err())
	}
}

func TestContextCancelDuringBoot(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	// The context ends once the server is up and answering 503 (it has written its pids),
	// not after a timer that a busy machine may outrun before the server has started.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	defer close(started)
	go func() {
		deadline := time.Now().Add(time.Minute) // a safety net: Start then fails on its own
		for time.Now().Before(deadline) {
			select {
			case <-started:
				return
			default:
			}
			if b, err := os.ReadFile(f.pids); err == nil && len(b) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Start(ctx, experiment.Server{Model: "m", ReadyTimeout: 5 * time.Minute, Env: f.env("FAKE_READY_AFTER", "1h", "FAKE_GRANDCHILD", "1")}, StartOptions{StopGrace: testGrace})
	var be *BootError
	if !errors.Is(err, context.Canceled) || errors.As(err, &be) {
		t.Fatalf("Start: %v, want the context's error and no boot failure", err)
	}
	pid, pgid, grandchild := f.procs(t)
	assertGone(t, pgid, pid, grandchild)
}

// resetProbed tells TestContextCancelDuringResetProbe that Start is probing the cache reset of
// its test-reset-blocks server.
var resetProbed = make(chan struct{}, 1)

func init() {
	// A command server whose cache reset blocks until its context is done.
	Register("test-reset-blocks", func(srv experiment.Server, t Target) (*Launch, error) {
		l, err := commandPreset(srv, t)
		if err != nil {
			return nil, err
		}
		l.ReadyPaths = []string{"/health"}
		l.Reset = func(ctx context.Context, h *Hook) error {
			resetProbed <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		return l, nil
	})
}

// TestContextCancelDuringResetProbe cancels the context while Start probes the cache reset, the
// last step of a boot: Start must report the interruption, not a server that cannot reset its
// cache (which would fail every request of a cache: reset experiment instead of stopping it).
func TestContextCancelDuringResetProbe(t *testing.T) {
	t.Parallel()
	f := newFake(t, "my-server")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-resetProbed
		cancel()
	}()
	srv := experiment.Server{Engine: "test-reset-blocks", Model: "m", Command: []string{"my-server", "--port", "{port}"},
		Env: f.env("FAKE_GRANDCHILD", "1"), ReadyTimeout: 20 * time.Second}
	s, err := Start(ctx, srv, StartOptions{StopGrace: testGrace})
	if s != nil {
		s.Stop(context.Background())
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: server %v, error %v; want the context's error", s != nil, err)
	}
	pid, pgid, grandchild := f.procs(t)
	assertGone(t, pgid, pid, grandchild)
}

func TestCrashWhileServing(t *testing.T) {
	t.Parallel()
	f := newFake(t, "vllm")
	s, _, err := start(t, experiment.Server{Model: "m", Env: f.env("FAKE_DIE_AFTER", "500ms")}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Wait()
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Wait: %v, want an *ExitError", err)
	}
	if ee.ExitCode != 3 || s.ExitCode() != 3 || !strings.Contains(err.Error(), "| fake: crashing") {
		t.Errorf("exit code %d (ExitCode() %d), error:\n%v", ee.ExitCode, s.ExitCode(), err)
	}
}

// runFakeRunner starts the test binary as a runner that boots a server, and waits until the
// server is ready. It returns the runner's command and the server's process group.
func runFakeRunner(t *testing.T, mode, grandchild string) (*exec.Cmd, int, *fake) {
	t.Helper()
	f := newFake(t, "my-server")
	env, err := json.Marshal(f.env("FAKE_GRANDCHILD", grandchild))
	// A grandchild that ignores SIGTERM is there to be killed after the grace; any other
	// server exits on SIGTERM, and a short grace would kill one slow to exit (a race build).
	grace := testGrace.String()
	if grandchild == "ignore" {
		grace = "500ms"
	}
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(f.dir, "ready")
	// The runner makes the server's scratch directory under TMPDIR: one of the test's own, so
	// that the test can see whether it is left behind.
	tmp := filepath.Join(f.dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, mode)
	cmd.Env = append(os.Environ(), roleEnv+"=runner", "FAKE_READY="+ready, "FAKE_SERVER_ENV="+string(env), "TMPDIR="+tmp, "FAKE_STOP_GRACE="+grace)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(time.Minute) // a safety net
	for {
		b, err := os.ReadFile(ready)
		if err == nil && len(b) > 0 {
			pgid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return cmd, pgid, f
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not get its server ready; its output:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNoServerOutlivesTheRunner ends the runner in each way it can end without stopping its
// server itself, and checks that every process of the server's group goes too, and the
// server's scratch directory with them.
func TestNoServerOutlivesTheRunner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode       string
		kill       bool   // SIGKILL the runner once its server is ready
		grandchild string // FAKE_GRANDCHILD: "1", or "ignore" for one that ignores SIGTERM
	}{
		{"sleep", true, "1"},            // the runner is killed
		{"sleep", true, "ignore"},       // the runner is killed and SIGTERM is not enough
		{"panic-defer", false, "1"},     // a panic unwinds through a deferred Stop
		{"panic-goroutine", false, "1"}, // a panic elsewhere: no deferred call runs
		{"exit", false, "1"},            // the runner exits without calling Stop
		{"interrupt", false, "1"},       // Ctrl-C cancels the context the server was started with
	}
	for _, c := range cases {
		t.Run(c.mode+"-"+c.grandchild, func(t *testing.T) {
			t.Parallel()
			cmd, pgid, f := runFakeRunner(t, c.mode, c.grandchild)
			pid, _, grandchild := f.procs(t)
			if c.kill {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			if c.mode == "interrupt" {
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			clean := c.mode == "exit" || c.mode == "interrupt"
			if clean != (err == nil) {
				t.Errorf("the runner exited with %v in mode %s", err, c.mode)
			}
			assertGone(t, pgid, pid, grandchild)
			left, err := os.ReadDir(filepath.Join(f.dir, "tmp"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("the server's scratch directory %s outlived the runner (mode %s)", e.Name(), c.mode)
			}
		})
	}
}

// TestRunnerDiesAsTheGuardStarts ends the runner right after its guard process has started,
// while the guard is still setting up (as when the runner dies of SIGPIPE printing its first
// progress line): the guard must still remove the server's scratch directory.
func TestRunnerDiesAsTheGuardStarts(t *testing.T) {
	t.Parallel()
	for i := 0; i < 5; i++ {
		f := newFake(t, "my-server")
		env, err := json.Marshal(f.env())
		if err != nil {
			t.Fatal(err)
		}
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(f.dir, "tmp")
		if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "exit-at-start")
		cmd.Env = append(os.Environ(), roleEnv+"=runner", "FAKE_READY="+filepath.Join(f.dir, "ready"), "FAKE_SERVER_ENV="+string(env), "TMPDIR="+tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the runner: %v\n%s", err, out)
		}
		deadline := time.Now().Add(time.Minute) // a safety net
		for {
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: the server's scratch directory %s outlived the runner", i, left[0].Name())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestEndpoint(t *testing.T) {
	const key = "sk-test-0123456789"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"bad key %s"}`, r.Header.Get("Authorization"))
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"remote-model"}]}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer ts.Close()

	t.Setenv("ENGINE_TEST_KEY", key)
	var log syncBuffer
	s, err := Start(context.Background(), experiment.Server{Engine: "endpoint", URL: ts.URL + "/v1/", APIKeyEnv: "ENGINE_TEST_KEY"},
		StartOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseURL() != ts.URL || s.Model() != "remote-model" || s.APIKey() != key || s.PID() != 0 || s.Argv() != nil {
		t.Errorf("base %q, model %q, pid %d, argv %q", s.BaseURL(), s.Model(), s.PID(), s.Argv())
	}
	if s.Redact("key="+key) != "key="+redact.Marker {
		t.Errorf("Redact does not hide the key")
	}
	if err := s.Stop(context.Background()); err != nil || !s.Exited() {
		t.Errorf("Stop: %v, Exited() %v", err, s.Exited())
	}

	t.Setenv("ENGINE_TEST_KEY", "sk-wrong-9876543210")
	_, err = Start(context.Background(), experiment.Server{Engine: "endpoint", URL: ts.URL, APIKeyEnv: "ENGINE_TEST_KEY"}, StartOptions{})
	var be *BootError
	if !errors.As(err, &be) || !strings.Contains(be.Hint, "api_key_env") || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("wrong key: %v", err)
	}

	t.Setenv("ENGINE_TEST_KEY", "")
	_, err = Start(context.Background(), experiment.Server{Engine: "endpoint", URL: ts.URL, APIKeyEnv: "ENGINE_TEST_KEY"}, StartOptions{})
	if err == nil || errors.As(err, &be) || !strings.Contains(err.Error(), "ENGINE_TEST_KEY") {
		t.Errorf("unset key: %v", err)
	}
}

// TestEndpointNothingListens points engine endpoint at a port where nothing listens: the hint
// must say so, not suggest a longer wait for a server that is not there.
func TestEndpointNothingListens(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, _, err = start(t, experiment.Server{Engine: "endpoint", Model: "m", URL: url, ReadyTimeout: 500 * time.Millisecond}, StartOptions{})
	var be *BootError
	if !errors.As(err, &be) {
		t.Fatalf("Start: %v, want a *BootError", err)
	}
	if want := "nothing listens at " + url; !strings.Contains(be.Hint, want) || !strings.Contains(be.Hint, "server.url") {
		t.Errorf("hint %q, want one that says %q and names server.url", be.Hint, want)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	const argSecret, envSecret = "hunter2-argument", "tok-environment"
	f := newFake(t, "my-server")
	env := f.env("MY_TOKEN", envSecret, "FAKE_ECHO", "printing "+argSecret+" and "+envSecret)
	srv := experiment.Server{Engine: "command", Command: []string{"my-server", "--port", "{port}", "--api-key", argSecret}, ReadyPath: "/health", Env: env}
	s, log, err := start(t, srv, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.Join(s.Argv(), " ") + "\n" + strings.Join(s.Env(), "\n") + "\n" + log.String() + strings.Join(s.LogTail(), "\n")
	for _, sec := range []string{argSecret, envSecret} {
		if strings.Contains(shown, sec) {
			t.Errorf("secret %q shown:\n%s", sec, shown)
		}
	}
	if !strings.Contains(log.String(), "printing "+redact.Marker+" and "+redact.Marker) {
		t.Errorf("the server's line is missing from the log:\n%s", log)
	}
	// The server itself still gets the real values.
	if rec := f.argv(t, "my-server"); rec[len(rec)-1] != argSecret {
		t.Errorf("the server got %q", rec)
	}
}

func init() {
	// Presets for TestAfterReady: a command server with a post-ready step.
	hooked := func(fail bool) Preset {
		return func(srv experiment.Server, t Target) (*Launch, error) {
			l, err := commandPreset(srv, t)
			if err != nil {
				return nil, err
			}
			l.ReadyPaths = []string{"/health"}
			l.AfterReady = func(ctx context.Context, h *Hook) error {
				script := "echo registering model in $ENGINE_TEST_DIR"
				if fail {
					script = "echo cannot register >&2; exit 4"
				}
				if err := h.Run(ctx, "sh", "-c", script); err != nil {
					return err
				}
				_, err := h.Post(ctx, "/flush_cache", map[string]string{"model": h.Model})
				return err
			}
			l.ServedModel = func(ctx context.Context, h *Hook) (string, error) {
				b, err := h.Get(ctx, "/v1/models")
				if err != nil {
					return "", err
				}
				return "alias-of-" + modelIDs(b)[0], nil
			}
			return l, nil
		}
	}
	Register("test-hooked", hooked(false))
	Register("test-hooked-failing", hooked(true))
}

func TestAfterReady(t *testing.T) {
	t.Parallel()
	f := newFake(t, "my-server")
	srv := experiment.Server{Engine: "test-hooked", Model: "tiny", Command: []string{"my-server", "--port", "{port}", "--name", "{model}"},
		Env: f.env("ENGINE_TEST_DIR", "/some/dir", "FAKE_GRANDCHILD", "1")}
	s, log, err := start(t, srv, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != "alias-of-tiny" {
		t.Errorf("Model() = %q, want the name ServedModel gave", s.Model())
	}
	if !strings.Contains(log.String(), "registering model in /some/dir") {
		t.Errorf("the post-ready command's output is not in the log:\n%s", log)
	}

	f2 := newFake(t, "my-server")
	srv.Engine = "test-hooked-failing"
	srv.Env = f2.env("FAKE_GRANDCHILD", "1")
	_, _, err = start(t, srv, StartOptions{})
	var be *BootError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "post-ready step failed") || !strings.Contains(err.Error(), "cannot register") {
		t.Fatalf("Start: %v, want a boot failure quoting the failed step", err)
	}
	pid, pgid, grandchild := f2.procs(t)
	assertGone(t, pgid, pid, grandchild)
}

func TestStartRejectsBadConfigs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		srv  experiment.Server
		want string
	}{
		{"unknown engine", experiment.Server{Engine: "tgi", Model: "m"}, `unknown engine "tgi"`},
		{"vllm without model", experiment.Server{Engine: "vllm"}, "server.model is required"},
		{"bad entrypoint", experiment.Server{Model: "m", Entrypoint: "grpc"}, "server.entrypoint"},
		{"sglang without model", experiment.Server{Engine: "sglang"}, "server.model is required"},
		{"llama.cpp without model", experiment.Server{Engine: "llamacpp"}, "GGUF"},
		{"command without argv", experiment.Server{Engine: "command"}, "server.command is required"},
		{"command with a relative ready path", experiment.Server{Engine: "command", Command: []string{"x"}, ReadyPath: "health"}, "server.ready_path"},
		{"endpoint without url", experiment.Server{Engine: "endpoint"}, "server.url is required"},
		{"endpoint with a bad url", experiment.Server{Engine: "endpoint", URL: "localhost:8000"}, "server.url"},
		{"endpoint with credentials in the url", experiment.Server{Engine: "endpoint", URL: "http://u:p@h"}, "credentials"},
	}
	for _, c := range cases {
		s, err := Start(context.Background(), c.srv, StartOptions{})
		var be *BootError
		if err == nil || errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Start = %v, want a config error with %q", c.name, err, c.want)
		}
		if s != nil {
			s.Stop(context.Background())
		}
	}
}

func TestMissingExecutable(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	cases := []struct {
		srv  experiment.Server
		want string
	}{
		{experiment.Server{Model: "m"}, "pip install vllm"},
		{experiment.Server{Model: "m", Entrypoint: "api_server"}, "no python on PATH"},
		{experiment.Server{Engine: "llamacpp", Model: "m.gguf"}, "llama-server is not on PATH"},
	}
	for _, c := range cases {
		c.srv.Env = map[string]string{"PATH": empty}
		_, err := Start(context.Background(), c.srv, StartOptions{})
		var be *BootError
		if !errors.As(err, &be) || !strings.Contains(be.Hint, c.want) || be.ExitCode != -1 {
			t.Errorf("%+v: Start = %v, want a boot failure with hint %q", c.srv, err, c.want)
		}
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	l, err := llamaCppPreset(experiment.Server{Model: "m.gguf", Dtype: "half"}, Target{Host: "h", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "server.dtype is not used by engine llamacpp") {
		t.Errorf("notes %q", l.Notes)
	}
}

func TestWaitPortFree(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := waitPortFree(context.Background(), "127.0.0.1", port, 200*time.Millisecond); err == nil {
		t.Error("waitPortFree returned nil while the port was held")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln.Close()
	}()
	if err := waitPortFree(context.Background(), "127.0.0.1", port, 5*time.Second); err != nil {
		t.Errorf("waitPortFree after release: %v", err)
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := mergeEnv([]string{"A=1", "PATH=/bin", "B=2"}, map[string]string{"PATH": "/x", "C": "3"}, map[string]string{"C": "4", "D": "5"})
	want := []string{"A=1", "PATH=/x", "B=2", "C=4", "D=5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mergeEnv = %q, want %q", got, want)
	}
}

// TestOnlySecretsAreRedacted checks that a variable whose name merely contains a secret word
// (TOKENIZERS_PARALLELISM) keeps its value in the log, while the password of a proxy URL in a
// variable without a secret name is hidden.
func TestOnlySecretsAreRedacted(t *testing.T) {
	t.Parallel()
	const proxyPW = "proxy-pw-1234"
	f := newFake(t, "my-server")
	env := f.env("TOKENIZERS_PARALLELISM", "false", "MAX_TOKENS", "4096", "HTTPS_PROXY", "http://me:"+proxyPW+"@127.0.0.1:3128",
		"FAKE_ECHO", "parallelism false, max 4096, proxy http://me:"+proxyPW+"@127.0.0.1:3128")
	srv := experiment.Server{Engine: "command", Command: []string{"my-server", "--port", "{port}"}, ReadyPath: "/health", Env: env}
	s, log, err := start(t, srv, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "parallelism false, max 4096") {
		t.Errorf("an ordinary value was redacted from the log:\n%s", log)
	}
	shown := strings.Join(s.Env(), "\n") + "\n" + log.String()
	if strings.Contains(shown, proxyPW) {
		t.Errorf("the proxy password is shown:\n%s", shown)
	}
	if !slices.Contains(s.Env(), "TOKENIZERS_PARALLELISM=false") {
		t.Errorf("Env() = %q, want TOKENIZERS_PARALLELISM=false kept", s.Env())
	}
}

func TestServerLogLines(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	l := newServerLog(&out, redact.New("s3cr3t"), hintInfo{Engine: "vllm", Host: "h", Port: 1})
	for _, chunk := range []string{"first li", "ne\nsecond s3cr3t\r\nprogress 10%\rprogress 100%\n", "unfinished"} {
		l.Write([]byte(chunk))
	}
	l.flush()
	wantOut := "first line\nsecond " + redact.Marker + "\nprogress 10%\rprogress 100%\nunfinished\n"
	if out.String() != wantOut {
		t.Errorf("log = %q, want %q", out.String(), wantOut)
	}
	wantTail := []string{"first line", "second " + redact.Marker, "progress 100%", "unfinished"}
	if got := l.lines(); !reflect.DeepEqual(got, wantTail) {
		t.Errorf("tail = %q, want %q", got, wantTail)
	}
}

func TestTailKeepsTheLastLines(t *testing.T) {
	t.Parallel()
	tl := newTail(3)
	for i := range 5 {
		fmt.Fprintf(tl, "line %d\n", i)
	}
	if got, want := tl.lines(), []string{"line 2", "line 3", "line 4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	long := strings.Repeat("é", maxLineLen)
	tl.Write([]byte(long + "\n"))
	last := tl.lines()[2]
	if len(last) > maxLineLen+len(" [cut]") || !strings.HasSuffix(last, " [cut]") {
		t.Errorf("a long line was kept as %d bytes", len(last))
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want procStat
		ok   bool
	}{
		{"123 (sleep) S 1 120 120 0 -1 4194304", procStat{'S', 1, 120}, true},
		{"77 (my (odd) name) Z 5 77 77", procStat{'Z', 5, 77}, true},
		{"9 (a b) R 2 3", procStat{'R', 2, 3}, true},
		{"9 (x) R", procStat{}, false},
		{"garbage", procStat{}, false},
	}
	for _, c := range cases {
		got, err := parseStat([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	if st, err := readStat(os.Getpid()); err != nil || st.pgrp != syscall.Getpgrp() || st.ppid != os.Getppid() {
		t.Errorf("readStat(self) = %+v, %v", st, err)
	}
}

func TestModelIDs(t *testing.T) {
	t.Parallel()
	ids := modelIDs([]byte(`{"object":"list","data":[{"id":"a","root":"r"},{"id":""},{"id":"b"}]}`))
	if !reflect.DeepEqual(ids, []string{"a", "b"}) {
		t.Errorf("modelIDs = %q", ids)
	}
}

func FuzzHintFor(f *testing.F) {
	files, _ := filepath.Glob("testdata/boot/*.log")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		h := HintFor("vllm", "127.0.0.1", 8000, lines)
		// Hints come from single lines: lines that match nothing change nothing.
		if h2 := HintFor("vllm", "127.0.0.1", 8000, append([]string{"INFO nothing to see"}, lines...)); h2 != h {
			t.Errorf("hint changed with a neutral line: %q vs %q", h, h2)
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("123 (sleep) S 1 120 120 0 -1"))
	f.Add([]byte("1 ((() R 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err != nil {
			return
		}
		if st.state == ')' {
			return // a state of ")" cannot be told from the end of the name
		}
		again, err := parseStat([]byte("1 (x) " + string([]byte{st.state}) + fmt.Sprintf(" %d %d", st.ppid, st.pgrp)))
		if err != nil || again != st {
			t.Errorf("parseStat(%q) = %+v, but its re-rendering parses as %+v, %v", b, st, again, err)
		}
	})
}

func FuzzServerLogChunks(f *testing.F) {
	f.Add("a\nb\r\nc", uint8(3))
	f.Add("one line without end", uint8(1))
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		n := int(size%16) + 1
		whole, chunked := &syncBuffer{}, &syncBuffer{}
		lw := newServerLog(whole, redact.New(), hintInfo{})
		lc := newServerLog(chunked, redact.New(), hintInfo{})
		lw.Write([]byte(text))
		for b := []byte(text); len(b) > 0; {
			k := min(n, len(b))
			lc.Write(b[:k])
			b = b[k:]
		}
		lw.flush()
		lc.flush()
		if whole.String() != chunked.String() || !reflect.DeepEqual(lw.lines(), lc.lines()) {
			t.Errorf("chunks of %d give %q, the whole text %q", n, chunked.String(), whole.String())
		}
	})
}

// BenchmarkServerLog measures the cost per server log line: splitting, redaction, the tail and
// the hint patterns.
func BenchmarkServerLog(b *testing.B) {
	line := []byte(`(APIServer pid=2620562) INFO 03-14 15:41:29 [loggers.py:123] Engine 000: Avg prompt throughput: 512.0 tokens/s, Avg generation throughput: 64.0 tokens/s` + "\n")
	l := newServerLog(io.Discard, redact.New("sk-0123456789"), hintInfo{Engine: "vllm", Host: "127.0.0.1", Port: 8000})
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		l.Write(line)
	}
}

// TestAPIKeyFromArgs checks that a server started with --api-key gets that key on the runner's
// requests: vLLM, SGLang, llama.cpp and the simulator refuse every other request.
func TestAPIKeyFromArgs(t *testing.T) {
	t.Setenv("ENGINE_TEST_ARGS_KEY", "from-env")
	tests := []struct {
		srv  experiment.Server
		want string
	}{
		{experiment.Server{Args: []string{"--seed", "1", "--api-key", "sk-args"}}, "sk-args"},
		{experiment.Server{Args: []string{"--api-key=sk-eq"}}, "sk-eq"},
		{experiment.Server{Args: []string{"--api-key"}}, ""},
		{experiment.Server{Args: []string{"--api-key", "sk-args"}, APIKeyEnv: "ENGINE_TEST_ARGS_KEY"}, "from-env"},
		{experiment.Server{Args: []string{"--hf-token", "hf_x"}}, ""},
		{experiment.Server{}, ""},
	}
	for _, tt := range tests {
		if got := apiKey(tt.srv); got != tt.want {
			t.Errorf("apiKey(%+v) = %q, want %q", tt.srv, got, tt.want)
		}
	}
}

// TestBootArgv checks that a boot that fails, or is interrupted, still says what command line
// it ran, secrets redacted.
func TestBootArgv(t *testing.T) {
	t.Parallel()
	const secret = "sk-argv-secret-42"
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
	}{
		{"exits", "exit 3", 0},
		{"interrupted", "sleep 30", 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			srv := experiment.Server{Engine: "command", Command: []string{"sh", "-c", tt.script, "sh", "{port}", "--api-key", secret}}
			_, err := Start(ctx, srv, StartOptions{StopGrace: testGrace})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			got := BootArgv(err)
			if len(got) != 7 || got[0] != "sh" || got[6] != redact.Marker {
				t.Errorf("BootArgv = %q, want the command line with the key redacted", got)
			}
		})
	}
	if got := BootArgv(errors.New("no launch")); got != nil {
		t.Errorf("BootArgv of another error = %q, want nil", got)
	}
}

// TestEndpointErrorsHideSecrets checks that the endpoint preset's errors do not repeat a key put
// where a variable name belongs, nor a URL's credentials.
func TestEndpointErrorsHideSecrets(t *testing.T) {
	tests := []struct {
		srv    experiment.Server
		secret string
	}{
		{experiment.Server{Engine: "endpoint", URL: "http://127.0.0.1:1", APIKeyEnv: "hf_AbCdEfGhIjKlMnOpQrSt"}, "AbCdEfGhIjKlMnOpQrSt"},
		{experiment.Server{Engine: "endpoint", URL: "ftp://me:url-pw-0987@127.0.0.1:1"}, "url-pw-0987"},
		{experiment.Server{Engine: "endpoint", URL: "ftp://127.0.0.1:1/v1?api_key=q-secret-0987"}, "q-secret-0987"},
	}
	for _, tt := range tests {
		_, err := Start(context.Background(), tt.srv, StartOptions{})
		if err == nil {
			t.Fatalf("Start(%s) succeeded", tt.srv.URL)
		}
		if strings.Contains(err.Error(), tt.secret) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

// TestEnvPlaceholders checks that {host}, {port} and {model} in server.env values reach the
// server replaced, for the command engine and for a preset engine alike, and that the
// environment shown for the manifest says what the server got.
func TestEnvPlaceholders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stand string
		srv         experiment.Server
	}{
		{"command", "my-server", experiment.Server{Engine: "command", Model: "tiny", ReadyPath: "/health",
			Command: []string{"my-server", "--port", "{port}"}}},
		{"vllm", "vllm", experiment.Server{Engine: "vllm", Model: "tiny"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, c.stand)
			srv := c.srv
			srv.Env = f.env("FAKE_ECHO", "listening on {host}:{port} for {model}", "MY_ADDR", "{host}:{port}")
			s, log, err := start(t, srv, StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			addr := "127.0.0.1:" + strconv.Itoa(s.Port())
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if want := "listening on " + addr + " for tiny"; !strings.Contains(log.String(), want) {
				t.Errorf("the server did not print %q:\n%s", want, log)
			}
			if want := "MY_ADDR=" + addr; !slices.Contains(s.Env(), want) {
				t.Errorf("Env() = %q, want it to hold %q", s.Env(), want)
			}
		})
	}
}

// TestEndpointRefusesURLs checks the server.url rules for a server built in code: a query, a
// fragment or credentials are refused before any request, without quoting the secret.
func TestEndpointRefusesURLs(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m"}]}`)
	}))
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")
	cases := []struct{ url, want string }{
		{ts.URL + "/v1?token=hunter2#frag", "must not have a query"},
		{ts.URL + "/v1#hunter2", "must not have a fragment"},
		{"http://me:hunter2@" + host, "must not carry credentials"},
		{"http://me:hun ter2@" + host, "must not carry credentials"},
	}
	for _, c := range cases {
		_, err := Start(context.Background(), experiment.Server{Engine: "endpoint", Model: "m", URL: c.url, ReadyTimeout: time.Second}, StartOptions{})
		if err == nil || !strings.Contains(err.Error(), "server.url: "+c.want) {
			t.Errorf("%s: error %v, want %q", c.url, err, c.want)
		} else if strings.Contains(err.Error(), "ter2") {
			t.Errorf("%s: the error quotes the secret: %v", c.url, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

// settingRE finds the experiment settings a hint names.
var settingRE = regexp.MustCompile(`server\.[a-z_]+`)

// TestHintsNameSettingsTheEngineTakes checks every hint, for every engine, against the
// experiment format and the presets: a setting a hint tells the user to change must be one an
// experiment file may set for that engine, and one the engine's preset does not ignore.
func TestHintsNameSettingsTheEngineTakes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(OllamaEnv, self) // any executable: the ollama preset only looks it up
	t.Setenv("K", "sk-test")  // the key variable of the endpoint case
	logs, err := filepath.Glob("testdata/boot/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no boot logs: %v", err)
	}
	// A value for each setting, as a line under server:.
	values := map[string]string{
		"server.dtype": "dtype: half", "server.max_model_len": "max_model_len: 4096", "server.model": "model: m",
		"server.host": "host: 127.0.0.1", "server.port": "port: 8000", "server.args": "args: [--x]",
		"server.env": "env: {A: b}", "server.ready_timeout": "ready_timeout: 1m", "server.ready_path": "ready_path: /health",
		"server.api_key_env": "api_key_env: K", "server.url": "url: http://127.0.0.1:1",
		"server.command": "command: [srv, \"{port}\"]", "server.entrypoint": "entrypoint: serve",
	}
	base := map[string]string{"command": "  command: [srv, \"{port}\"]\n", "endpoint": "  url: http://127.0.0.1:1\n"}
	target := Target{Host: "127.0.0.1", Port: 1, Executable: self, Dir: t.TempDir()}
	for _, eng := range experiment.Engines {
		hints := []string{authHint(eng, false), authHint(eng, true)}
		for _, f := range logs {
			if experiment.Boots(eng) { // a server the runner does not start has no log to read
				hints = append(hints, HintFor(eng, "127.0.0.1", 8000, readLines(t, f)))
			}
		}
		for _, h := range hints {
			for _, setting := range settingRE.FindAllString(h, -1) {
				v, ok := values[setting]
				if !ok {
					t.Errorf("engine %s: hint %q names %s, which the test has no value for", eng, h, setting)
					continue
				}
				yaml := "version: 1\nname: t\nserver:\n  engine: " + eng + "\n  model: m\n" + base[eng]
				if !strings.Contains(yaml, "  "+strings.SplitN(v, ":", 2)[0]+":") {
					yaml += "  " + v + "\n"
				}
				yaml += "request:\n  prompt: hi\n  max_tokens: 8\ncache: keep\n"
				e, err := experiment.Parse("t.yaml", []byte(yaml))
				var cfgs []experiment.Config
				if err == nil {
					cfgs, err = e.Expand()
				}
				if err != nil {
					t.Errorf("engine %s: hint %q names %s, which an experiment cannot set for it: %v", eng, h, setting, err)
					continue
				}
				preset, _ := lookup(eng)
				l, err := preset(cfgs[0].Server, target)
				if err != nil {
					t.Fatalf("engine %s with %s: %v", eng, setting, err)
				}
				for _, n := range l.Notes {
					if strings.Contains(n, setting+" is not used") {
						t.Errorf("engine %s: hint %q names %s, which the engine ignores", eng, h, setting)
					}
				}
			}
		}
	}
}

// TestEndpointKeyNotAHeaderValue checks that an API key that cannot be a header value fails
// Start at once, before any request, naming the variable and not the key.
func TestEndpointKeyNotAHeaderValue(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m"}]}`)
	}))
	defer ts.Close()
	cases := []struct{ key, want string }{
		{"sk-0123456789\n", "a line break (\\n) at its end"},
		{"sk-0123\r\n456789", "a carriage return (\\r) at byte 8 of 15"},
		{"sk-0123\x07456789", "a control character (0x07) at byte 8"},
		{"sk-0123456789\x7f", "a control character (0x7f) at its end"},
	}
	for _, c := range cases {
		t.Setenv("ENGINE_TEST_BAD_KEY", c.key)
		before := hits.Load()
		_, err := Start(context.Background(), experiment.Server{Engine: "endpoint", Model: "m", URL: ts.URL,
			APIKeyEnv: "ENGINE_TEST_BAD_KEY", ReadyTimeout: 3 * time.Second}, StartOptions{})
		// Failing at once means before any request: a key found bad only by waiting for
		// readiness would have sent some.
		if n := hits.Load() - before; n != 0 {
			t.Errorf("%q: Start sent %d requests; want it to fail before sending any", c.key, n)
		}
		if err == nil || !strings.Contains(err.Error(), "ENGINE_TEST_BAD_KEY") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming the variable and saying %q", c.key, err, c.want)
		} else if strings.Contains(err.Error(), "0123") {
			t.Errorf("%q: the error shows the key: %v", c.key, err)
		}
	}
	t.Setenv("ENGINE_TEST_BAD_KEY", "sk-with\ttab and space")
	s, err := Start(context.Background(), experiment.Server{Engine: "endpoint", Model: "m", URL: ts.URL, APIKeyEnv: "ENGINE_TEST_BAD_KEY"}, StartOptions{})
	if err != nil {
		t.Fatalf("a key with a tab and a space: %v", err)
	}
	s.Stop(context.Background())
	if n := hits.Load(); n == 0 {
		t.Errorf("the valid key sent no request")
	}
}

// TestReadyTimeoutFromTable checks that a server built in code, with no ready_timeout, waits
// as long as the engine table says for its engine (30 s for endpoint and sim), not the 10
// minutes meant for engines that load real weights; one that sets it keeps its own.
func TestReadyTimeoutFromTable(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"remote-model"}]}`)
	}))
	defer ts.Close()
	facts, ok := enginefacts.Lookup("endpoint")
	if !ok || facts.ReadyTimeout == 0 || facts.ReadyTimeout == DefaultReadyTimeout {
		t.Fatalf("the table's endpoint ready timeout %v says nothing of this test", facts.ReadyTimeout)
	}
	for _, tt := range []struct {
		set, want time.Duration
	}{{0, facts.ReadyTimeout}, {time.Minute, time.Minute}} {
		s, err := Start(context.Background(), experiment.Server{Engine: "endpoint", URL: ts.URL, ReadyTimeout: tt.set}, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.timeout != tt.want {
			t.Errorf("ready_timeout %v: waits %v, want %v", tt.set, s.timeout, tt.want)
		}
		s.Stop(context.Background())
	}
	for _, e := range enginefacts.All() {
		if got := readyTimeout(experiment.Server{Engine: e.Name}); got != e.ReadyTimeout {
			t.Errorf("%s: ready timeout %v, want the table's %v", e.Name, got, e.ReadyTimeout)
		}
	}
}
