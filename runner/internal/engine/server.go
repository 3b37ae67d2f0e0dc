package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

// Defaults for the settings of StartOptions and experiment.Server left at zero.
const (
	DefaultHost               = enginefacts.DefaultHost
	DefaultReadyTimeout       = enginefacts.DefaultReadyTimeout
	DefaultStopGrace          = 10 * time.Second
	DefaultPortReleaseTimeout = 30 * time.Second
)

// logTailLines is how many of the server's last log lines are kept for errors and hints.
const logTailLines = 50

// StartOptions are the runner's side of starting a server.
type StartOptions struct {
	// Log receives every line the server prints on stdout and stderr (secrets redacted), and
	// the runner's own notes about the server, marked "[runner]". Nil discards them.
	Log io.Writer
	// LogName is how errors refer to the log, e.g. results/x/server.log; empty for none.
	LogName string
	// Progress receives one-line progress reports for the user. Nil discards them.
	Progress io.Writer
	// Executable is the runner's own executable, run by engine: sim; empty means
	// os.Executable().
	Executable string
	// Dir is a scratch directory for the server's files; empty means a new temporary
	// directory, removed after Stop.
	Dir string
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; 0 means
	// DefaultStopGrace.
	StopGrace time.Duration
	// PortReleaseTimeout bounds how long Stop waits for the server's port to be free again;
	// 0 means DefaultPortReleaseTimeout.
	PortReleaseTimeout time.Duration
	// KeepCache says that the run never empties the server's prefix cache (cache: keep), so
	// Start does not probe the reset either: the probe empties the cache, and a server the
	// runner did not boot may be serving others. CanResetCache is then false.
	KeepCache bool
}

// Server is a running, ready inference server (or, for engine: endpoint, one that was already
// running). Its methods are safe for concurrent use.
type Server struct {
	engine    string
	launch    *Launch
	red       *redact.Replacer
	host      string
	port      int
	baseURL   string
	argv      []string // as launched, redacted
	env       []string // the variables set for the server, redacted, sorted
	serverEnv []string // the server's whole environment
	api       *openai.Client
	log       *serverLog
	progress  io.Writer
	grace     time.Duration
	portWait  time.Duration
	dir       string
	ownDir    bool
	timeout   time.Duration

	model    string
	version  string
	bootTime time.Duration
	canReset bool
	noProbe  bool        // StartOptions.KeepCache: the reset is not probed
	resetErr error       // why the reset probe failed, when it did
	ready    atomic.Bool // readiness was reached: the server held its port

	cmd       *exec.Cmd
	pgid      int
	startedAt time.Time
	done      chan struct{}
	exitMu    sync.Mutex
	state     *os.ProcessState
	waitErr   error

	stopping atomic.Bool // a stop was asked for: an exit after it is no crash
	termOnce sync.Once
	stopOnce sync.Once
	stopErr  error
}

// Start launches the server srv describes, in its own process group, and returns once it is
// ready: its readiness paths answer 200 and the preset's post-ready step is done. A server
// that cannot be brought up yields a *BootError (its process group already ended); an
// experiment setting a preset rejects yields a plain error. When ctx is done, the server is
// stopped as Stop does, during boot or later; pass a context that outlives the measurements
// and call Stop to control the end.
func Start(ctx context.Context, srv experiment.Server, opts StartOptions) (*Server, error) {
	name, host := engineName(srv), hostOf(srv)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not started: %w", name, err)
	}
	preset, err := lookup(name)
	if err != nil {
		return nil, fmt.Errorf("server.engine: %w", err)
	}
	port := srv.Port
	if port == 0 {
		if port, err = freePort(host); err != nil {
			return nil, fmt.Errorf("%s: pick a free port on %s: %w", name, host, err)
		}
	}
	exe := opts.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("%s: find the runner's executable: %w", name, err)
		}
	}
	dir, ownDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "runner-"+strings.ReplaceAll(name, "/", "_")+"-"); err != nil {
			return nil, fmt.Errorf("%s: scratch directory: %w", name, err)
		}
		ownDir = true
	}
	t := Target{Host: host, Port: port, Executable: exe, Dir: dir}
	// The port is known only now; a server that takes its address from the environment
	// (server.env: {MY_PORT: "{port}"}) gets it the same way as one that takes it as an argument.
	srv.Env = expandEnv(srv, t)
	l, err := preset(srv, t)
	if err != nil {
		if ownDir {
			os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if l.BaseURL == "" {
		l.BaseURL = t.URL()
	}
	l.BaseURL = strings.TrimRight(l.BaseURL, "/")

	s := &Server{
		engine:   name,
		launch:   l,
		host:     host,
		port:     port,
		baseURL:  l.BaseURL,
		progress: orDiscard(opts.Progress),
		grace:    orDefault(opts.StopGrace, DefaultStopGrace),
		portWait: orDefault(opts.PortReleaseTimeout, DefaultPortReleaseTimeout),
		noProbe:  opts.KeepCache,
		dir:      dir,
		ownDir:   ownDir,
		timeout:  readyTimeout(srv),
		model:    srv.Model,
		done:     make(chan struct{}),
		// Redirects are not followed: a readiness probe that followed one to a login page
		// would call ready a server that is not, and a measured request would time two.
		api: &openai.Client{BaseURL: l.BaseURL, APIKey: l.APIKey,
			HTTP: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: false}, CheckRedirect: openai.NoRedirect}},
	}
	extra := mergeEnv(nil, l.Env, srv.Env)
	s.red = redact.New(append(append(append(l.Secrets, l.APIKey), redact.EnvSecrets(l.Env)...),
		append(redact.EnvSecrets(srv.Env), redact.ArgSecrets(l.Argv)...)...)...)
	s.argv = s.red.Strings(l.Argv)
	s.env = s.red.Strings(extra)
	s.log = newServerLog(opts.Log, s.red, hintInfo{Engine: name, Host: host, Port: port})
	s.log.name = opts.LogName
	for _, n := range l.Notes {
		fmt.Fprintf(s.progress, "%s: note: %s\n", name, s.red.String(n))
	}
	if len(l.Argv) == 0 {
		return s.connect(ctx)
	}
	return s.boot(ctx, srv)
}

// connect waits for a server that the runner does not start (engine: endpoint).
func (s *Server) connect(ctx context.Context) (*Server, error) {
	s.startedAt = time.Now()
	s.log.note("waiting for %s", s.baseURL)
	if err := s.waitReady(ctx); err != nil {
		s.Stop(context.Background())
		var f *bootFailure
		if errors.As(err, &f) {
			return nil, &BootError{Engine: s.engine, Reason: f.reason, Hint: f.hint, ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
		}
		return nil, fmt.Errorf("%s: waiting for %s: %w", s.engine, s.baseURL, err)
	}
	if err := s.finishBoot(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// boot starts the server process and waits until it is ready.
func (s *Server) boot(ctx context.Context, srv experiment.Server) (*Server, error) {
	env := mergeEnv(os.Environ(), s.launch.Env, srv.Env)
	s.serverEnv = env
	path, argv0, err := findExecutable(s.launch.Argv[0], env)
	s.launch.Argv[0], s.argv[0] = argv0, argv0
	if err != nil {
		s.cleanupDir()
		return nil, &BootError{Engine: s.engine, Reason: "cannot start: " + err.Error(),
			Hint: missingHint(s.engine, argv0), ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
	}
	if srv.Port != 0 {
		if err := portFree(s.host, s.port); err != nil {
			s.cleanupDir()
			return nil, &BootError{Engine: s.engine, Reason: fmt.Sprintf("port %d on %s is already in use (%v)", s.port, s.host, err),
				Hint: portHint(s.host, s.port), ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
		}
	}
	if !guardEntered.Load() {
		s.cleanupDir()
		return nil, fmt.Errorf("%s: this program never called engine.MaybeRunGuard, so it cannot act as the guard of a server", s.engine)
	}
	self, err := os.Executable()
	if err != nil {
		s.cleanupDir()
		return nil, fmt.Errorf("%s: find the runner's executable: %w", s.engine, err)
	}
	if err := s.startProcess(ctx, self, path, env); err != nil {
		s.cleanupDir()
		return nil, &BootError{Engine: s.engine, Reason: fmt.Sprintf("cannot start %s: %v", argv0, err), ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Stop(context.Background())
		case <-s.done:
		}
	}()

	if err := s.waitReady(ctx); err != nil {
		return nil, s.bootFailed(err)
	}
	if err := s.finishBoot(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// startProcess starts the server at path, with env, in its own process group. The process
// started is the runner itself, self, acting as a guard (see guard.go): it runs the server in
// the same process group and ends that whole group should the runner die. A goroutine waits
// for the process and closes s.done when it has exited.
func (s *Server) startProcess(ctx context.Context, self, path string, env []string) error {
	cmd := exec.CommandContext(ctx, self)
	cmd.Args = append([]string{self, path}, s.launch.Argv...)
	guard := fmt.Sprintf("%s=%d:%d", guardEnv, os.Getpid(), s.grace.Milliseconds())
	if s.ownDir {
		guard += ":" + s.dir
	}
	cmd.Env = append(env, guard)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: guardDeathSignal}
	cmd.Cancel = func() error { s.terminate(); return nil }
	cmd.WaitDelay = s.grace
	s.cmd = cmd

	s.log.note("starting: %s", strings.Join(s.argv, " "))
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits, not the process
		// (golang.org/issue/27505). This goroutine keeps its thread locked for as long as the
		// child lives and never unlocks it, so the thread ends only after Wait has reaped the
		// child, or with the runner.
		runtime.LockOSThread()
		s.startedAt = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		s.pgid = cmd.Process.Pid
		started <- nil
		err := cmd.Wait()
		s.log.flush()
		s.exitMu.Lock()
		s.state, s.waitErr = cmd.ProcessState, err
		s.exitMu.Unlock()
		close(s.done)
	}()
	return <-started
}

// Engine returns the engine name, e.g. vllm.
func (s *Server) Engine() string { return s.engine }

// BaseURL returns the root of the server's HTTP API, e.g. http://127.0.0.1:8000 (no /v1).
func (s *Server) BaseURL() string { return s.baseURL }

// Model returns the model name requests must carry.
func (s *Server) Model() string { return s.model }

// Version returns the engine version the server reported, or "" when it reports none.
func (s *Server) Version() string { return s.version }

// Argv returns the server's command line as launched, secrets redacted; nil when the runner
// started no process.
func (s *Server) Argv() []string { return append([]string(nil), s.argv...) }

// Env returns the environment variables set for the server on top of the runner's own, as
// sorted KEY=VALUE, secrets redacted.
func (s *Server) Env() []string { return append([]string(nil), s.env...) }

// BootTime returns the time from process start to ready (for engine: endpoint, from the first
// readiness request to ready).
func (s *Server) BootTime() time.Duration { return s.bootTime }

// PID returns the process id of the server's process group leader; 0 when there is no process.
func (s *Server) PID() int { return s.pgid }

// Port returns the TCP port the server was told to listen on.
func (s *Server) Port() int { return s.port }

// APIKey returns the key to send as a bearer token, or "". Never print it.
func (s *Server) APIKey() string { return s.launch.APIKey }

// Redact returns text with the server's secrets replaced.
func (s *Server) Redact(text string) string { return s.red.String(text) }

// LogTail returns the last lines the server printed, secrets redacted.
func (s *Server) LogTail() []string { return s.log.lines() }

// mergeEnv returns base (KEY=VALUE) with the variables of each layer set in turn, later layers
// winning. Variables new to base are appended in sorted order.
func mergeEnv(base []string, layers ...map[string]string) []string {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		index[k] = i
	}
	for _, layer := range layers {
		keys := make([]string, 0, len(layer))
		for k := range layer {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv := k + "=" + layer[k]
			if i, ok := index[k]; ok {
				out[i] = kv
			} else {
				index[k] = len(out)
				out = append(out, kv)
			}
		}
	}
	return out
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// readyTimeout returns how long to wait for srv to become ready: its own ready_timeout, else
// the engine table's default for its engine. An experiment file gets the table's default when
// it is read; a server built in code (a test, a command that boots runner sim) does not, and
// would otherwise wait the 10 minutes meant for engines that load real weights.
func readyTimeout(srv experiment.Server) time.Duration {
	def := DefaultReadyTimeout
	if e, ok := enginefacts.Lookup(engineName(srv)); ok && e.ReadyTimeout > 0 {
		def = e.ReadyTimeout
	}
	return orDefault(srv.ReadyTimeout, def)
}

// engineName returns the engine a server config names, the default when it names none.
func engineName(srv experiment.Server) string {
	if srv.Engine == "" {
		return DefaultEngine
	}
	return srv.Engine
}

// hostOf returns the host a booted server binds to, the default when the config sets none.
func hostOf(srv experiment.Server) string {
	if srv.Host == "" {
		return DefaultHost
	}
	return srv.Host
}
