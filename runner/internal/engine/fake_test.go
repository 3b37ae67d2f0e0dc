package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// The test binary doubles as the stand-in server and as a stand-in runner: TestMain looks at
// roleEnv before running any test.
const roleEnv = "ENGINE_TEST_ROLE"

func init() {
	// Keep the main thread to the main goroutine. The main thread cannot exit before the
	// process does, so a goroutine scheduled on it could never show what happens when the
	// thread that started a server exits (TestServerOutlivesTheStartingThread).
	runtime.LockOSThread()
}

func TestMain(m *testing.M) {
	MaybeRunGuard()
	switch os.Getenv(roleEnv) {
	case "server":
		os.Exit(fakeServer(os.Args[1:]))
	case "runner":
		os.Exit(fakeRunner(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeServer is a stand-in inference server. It takes --host and --port from its arguments
// (as every preset passes them) and behaves as the FAKE_* variables say:
//
//	FAKE_LOG=FILE          print FILE on stderr first
//	FAKE_EXIT=N            then exit with status N
//	FAKE_ECHO=TEXT         print TEXT on stdout
//	FAKE_PIDS=FILE         write "PID PGID GRANDCHILD_PID" to FILE once listening
//	FAKE_GRANDCHILD=1      start a child `sleep 300` ("ignore": one that ignores SIGTERM)
//	FAKE_IGNORE_TERM=1     ignore SIGTERM
//	FAKE_LISTEN_AFTER=D    wait D before listening (connections are refused meanwhile)
//	FAKE_READY_AFTER=D     answer /health with 503 until D after start
//	FAKE_DIE_AFTER=D       exit with status 3 D after listening
//	FAKE_BIND=PORT         listen on PORT instead of --port
//	FAKE_MODEL=NAME        the model id /v1/models lists (default: the model argument)
func fakeServer(args []string) int {
	start := time.Now()
	if f := os.Getenv("FAKE_LOG"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 99
		}
		os.Stderr.Write(b)
	}
	if v := os.Getenv("FAKE_EXIT"); v != "" {
		n, _ := strconv.Atoi(v)
		return n
	}
	if v := os.Getenv("FAKE_ECHO"); v != "" {
		fmt.Println(v)
	}
	if os.Getenv("FAKE_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		go func() {
			<-sigs
			fmt.Println("fake: SIGTERM, shutting down")
			os.Exit(0)
		}()
	}
	grandchild := 0
	switch os.Getenv("FAKE_GRANDCHILD") {
	case "1":
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 98
		}
		grandchild = c.Process.Pid
	case "ignore":
		c := exec.Command("sh", "-c", `trap "" TERM; exec sleep 300`)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 98
		}
		grandchild = c.Process.Pid
	}
	time.Sleep(envDuration("FAKE_LISTEN_AFTER"))
	host, port := argValue(args, "--host"), argValue(args, "--port")
	if host == "" {
		host = "127.0.0.1"
	}
	if p := os.Getenv("FAKE_BIND"); p != "" {
		port = p
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake: %v\n", err)
		return 1
	}
	if f := os.Getenv("FAKE_PIDS"); f != "" {
		text := fmt.Sprintf("%d %d %d\n", os.Getpid(), syscall.Getpgrp(), grandchild)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 97
		}
	}
	fmt.Printf("fake: listening on %s\n", ln.Addr())
	// FAKE_DIE_AFTER counts from the first /v1/models answer (the last readiness check), so that
	// the fake crashes while serving however slowly a loaded machine runs the readiness loop.
	var dieOnce sync.Once
	dieLater := func() {
		if d := envDuration("FAKE_DIE_AFTER"); d > 0 {
			dieOnce.Do(func() {
				go func() {
					time.Sleep(d)
					fmt.Println("fake: crashing")
					os.Exit(3)
				}()
			})
		}
	}
	model := os.Getenv("FAKE_MODEL")
	for _, flag := range []string{"--model", "--model-path", "-m", "--name"} {
		if model == "" {
			model = argValue(args, flag)
		}
	}
	if model == "" && len(args) > 1 && args[0] == "serve" {
		model = args[1]
	}
	readyAt := start.Add(envDuration("FAKE_READY_AFTER"))
	// A server that starts healthy-later answers 503 at least once, however late the first
	// probe comes on a busy machine, so that a test can tell the runner waited.
	var said503 atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(readyAt) || (envDuration("FAKE_READY_AFTER") > 0 && !said503.Load()) {
			said503.Store(true)
			fmt.Println("fake: /health 503")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		defer dieLater()
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": model, "object": "model"}}})
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"version":"0.0.0-fake"}`)
	})
	mux.HandleFunc("GET /get_server_info", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"model_path":"x","version":"0.0.0-fake-sglang"}`)
	})
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"total_slots":1,"build_info":"b0-fake"}`)
	})
	mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, r *http.Request) {
		// vLLM serves this route only in development mode.
		if os.Getenv("VLLM_SERVER_DEV_MODE") != "1" {
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("POST /flush_cache", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "Cache flushed.")
	})
	fmt.Fprintln(os.Stderr, http.Serve(ln, mux))
	return 1
}

func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

// fakeRunner is a stand-in runner for the tests of what happens when the runner dies. It
// starts a server (engine: command, a stand-in with a grandchild), writes the server's pgid to
// FAKE_READY, then, depending on args[0]: sleeps until it is killed ("sleep"), panics with a
// deferred Stop ("panic-defer"), panics in another goroutine, where no deferred Stop runs
// ("panic-goroutine"), exits without stopping the server ("exit"), or waits for SIGINT, which
// cancels the context the server was started with, as the runner's main does ("interrupt").
// With "exit-at-start" it exits on its first line of progress, printed right after the guard
// process has started, as a runner whose stderr is a closed pipe dies of SIGPIPE.
func fakeRunner(args []string) int {
	ctx := context.Background()
	if args[0] == "interrupt" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(os.Getenv("FAKE_SERVER_ENV")), &env); err != nil {
		fmt.Fprintln(os.Stderr, "fake runner:", err)
		return 90
	}
	srv := experiment.Server{Engine: "command", Command: []string{"my-server", "--port", "{port}"}, ReadyPath: "/health", Env: env}
	// FAKE_STOP_GRACE, when set, is the stop grace (see runFakeRunner).
	opts := StartOptions{StopGrace: 500 * time.Millisecond, Log: os.Stderr}
	if d := envDuration("FAKE_STOP_GRACE"); d > 0 {
		opts.StopGrace = d
	}
	if args[0] == "exit-at-start" {
		opts.Progress = exitWriter{}
	}
	s, err := Start(ctx, srv, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake runner:", err)
		return 91
	}
	if err := os.WriteFile(os.Getenv("FAKE_READY"), []byte(strconv.Itoa(s.PID())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "fake runner:", err)
		return 92
	}
	switch args[0] {
	case "sleep":
		time.Sleep(time.Hour)
	case "panic-defer":
		defer s.Stop(context.Background())
		panic("fake runner: panic with a deferred Stop")
	case "panic-goroutine":
		go func() { panic("fake runner: panic in a goroutine") }()
		time.Sleep(time.Hour)
	case "exit":
		return 0
	case "interrupt":
		<-s.Done()
		if err := s.Stop(context.Background()); err != nil { // returns once the stop is complete
			fmt.Fprintln(os.Stderr, "fake runner:", err)
			return 94
		}
		return 0
	}
	return 93
}

// exitWriter ends the process on its first write.
type exitWriter struct{}

func (exitWriter) Write([]byte) (int, error) {
	os.Exit(0)
	return 0, nil
}

// fake is a directory of stand-in executables for one test. Each records its argv, one
// argument a line, in NAME.argv and then runs the test binary as the fake server.
type fake struct {
	dir  string
	pids string
}

func newFake(t *testing.T, names ...string) *fake {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{dir: t.TempDir()}
	f.pids = filepath.Join(f.dir, "pids")
	for _, n := range names {
		script := fmt.Sprintf("#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%%s\\n' \"$a\"; done > %q\nexec %q \"$@\"\n",
			filepath.Join(f.dir, n+".argv"), self)
		if err := os.WriteFile(filepath.Join(f.dir, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// env returns the server environment that makes the stand-ins work, plus kv pairs.
func (f *fake) env(kv ...string) map[string]string {
	m := map[string]string{
		"PATH":      f.dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		roleEnv:     "server",
		"FAKE_PIDS": f.pids,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// argv returns what the stand-in named name recorded; nil when it never ran.
func (f *fake) argv(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name+".argv"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// procs returns the fake server's pid, its process group and its grandchild's pid.
func (f *fake) procs(t *testing.T) (pid, pgid, grandchild int) {
	t.Helper()
	b, err := os.ReadFile(f.pids)
	if err != nil {
		t.Fatalf("the fake server wrote no pids: %v", err)
	}
	if _, err := fmt.Sscan(string(b), &pid, &pgid, &grandchild); err != nil {
		t.Fatalf("pids file %q: %v", b, err)
	}
	return pid, pgid, grandchild
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z' && st.state != 'X'
}

// assertGone fails the test unless the process group and the given pids are all gone within
// a few seconds.
func assertGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	// A safety net: the processes normally go within a second or two of the stop.
	deadline := time.Now().Add(time.Minute)
	for {
		left := groupMembers(pgid)
		for _, p := range pids {
			if p > 0 && alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of server group %d are still running", left, pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
