package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// BootError is a server that could not be brought up: it exited, timed out, found its port
// taken, rejected an argument, or could not be started at all.
type BootError struct {
	Engine   string   // the engine name, e.g. vllm
	Reason   string   // what went wrong, e.g. "exited with status 1 before it was ready"
	Hint     string   // what to change, when the failure is a known one; else empty
	LogTail  []string // the last lines of the server log (secrets redacted)
	ExitCode int      // the server's exit status; -1 when it did not exit by itself or never ran
	Log      string   // where the full log is, when known
	// Argv is the command line the server was (or was to be) started with, secrets redacted;
	// nil for a server the runner does not start (engine: endpoint).
	Argv []string
}

// Error quotes the reason, the hint and the last lines of the log.
func (e *BootError) Error() string {
	return describeFailure(e.Engine+": server failed to boot: "+e.Reason, e.Hint, e.LogTail, e.Log)
}

// interruptedBoot is a boot that ended because its context did: it wraps the context's error.
type interruptedBoot struct {
	err  error
	argv []string
}

func (e *interruptedBoot) Error() string { return e.err.Error() }
func (e *interruptedBoot) Unwrap() error { return e.err }

// BootArgv returns the command line, secrets redacted, of the server whose boot failed or was
// interrupted with err; nil when err does not say (the server was never to be started, or its
// launch could not even be prepared).
func BootArgv(err error) []string {
	var be *BootError
	if errors.As(err, &be) {
		return append([]string(nil), be.Argv...)
	}
	var ib *interruptedBoot
	if errors.As(err, &ib) {
		return append([]string(nil), ib.argv...)
	}
	return nil
}

// ExitError is a server that exited while it was serving, without being asked to stop.
type ExitError struct {
	Engine   string
	Status   string // e.g. "status 1", "signal killed"
	ExitCode int    // -1 when a signal ended it
	Hint     string
	LogTail  []string
	Log      string
}

// Error quotes the exit status, the hint and the last lines of the log.
func (e *ExitError) Error() string {
	return describeFailure(e.Engine+": server exited unexpectedly with "+e.Status, e.Hint, e.LogTail, e.Log)
}

// quotedTail is how many log lines an error message quotes.
const quotedTail = 20

func describeFailure(head, hint string, tail []string, log string) string {
	var b strings.Builder
	b.WriteString(head)
	if hint != "" {
		b.WriteString("\nhint: ")
		b.WriteString(hint)
	}
	if len(tail) > quotedTail {
		tail = tail[len(tail)-quotedTail:]
	}
	if len(tail) > 0 {
		fmt.Fprintf(&b, "\nlast %d lines of the server log", len(tail))
		if log != "" {
			fmt.Fprintf(&b, " (%s)", log)
		}
		b.WriteString(":")
		b.WriteString(quoteLines(tail))
	}
	return b.String()
}

// bootFailure is a failed readiness wait, before it becomes a BootError.
type bootFailure struct {
	reason string
	hint   string
	exited bool
}

func (f *bootFailure) Error() string { return f.reason }

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
		dir:      dir,
		ownDir:   ownDir,
		timeout:  orDefault(srv.ReadyTimeout, DefaultReadyTimeout),
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

	// The process started is the runner itself acting as a guard (see guard.go): it runs the
	// server in the same process group and ends that whole group should the runner die.
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
	if err := <-started; err != nil {
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

// bootFailed ends the server's process group and turns err into the error Start returns.
func (s *Server) bootFailed(err error) error {
	s.Stop(context.Background())
	var f *bootFailure
	if !errors.As(err, &f) {
		return &interruptedBoot{err: fmt.Errorf("%s: boot interrupted: %w", s.engine, err), argv: s.Argv()}
	}
	be := &BootError{Engine: s.engine, Reason: f.reason, Hint: f.hint, LogTail: s.log.lines(), ExitCode: -1, Log: s.log.name, Argv: s.Argv()}
	if f.exited {
		be.Reason = fmt.Sprintf("exited with %s before it was ready", s.exitStatus())
		be.ExitCode = s.ExitCode()
	}
	if h := s.log.hints.hint(); h != "" {
		be.Hint = h
	} else if f.exited && be.ExitCode == 0 {
		be.Hint = exitZeroHint(s.engine, s.launch.Argv)
	}
	return be
}

// finishBoot runs the post-ready step, then learns the served model, the version and whether
// the prefix cache can be reset.
func (s *Server) finishBoot(ctx context.Context) error {
	h := s.hook()
	if s.launch.AfterReady != nil {
		hctx, cancel := context.WithDeadline(ctx, s.startedAt.Add(s.timeout))
		err := s.launch.AfterReady(hctx, h)
		cancel()
		if err != nil {
			return s.bootFailed(&bootFailure{reason: "post-ready step failed: " + s.red.String(err.Error())})
		}
	}
	s.bootTime = time.Since(s.startedAt)
	s.ready.Store(true)

	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.launch.ServedModel != nil {
		m, err := s.launch.ServedModel(qctx, h)
		if err != nil {
			return s.bootFailed(&bootFailure{reason: "cannot tell the served model name: " + s.red.String(err.Error())})
		}
		s.model = m
	} else {
		s.model = s.modelFromList(qctx, h)
	}
	for i, p := range s.versionPaths() {
		b, err := h.Get(qctx, p)
		if err != nil {
			if i == len(s.versionPaths())-1 {
				s.log.note("version unknown: %v", err)
			}
			continue
		}
		s.version = openai.ParseVersion(b)
		break
	}
	if s.launch.Reset != nil || s.launch.ResetPath != "" {
		if err := s.reset(qctx, h); err != nil {
			s.log.note("prefix cache reset unavailable: %v", err)
		} else {
			s.canReset = true
		}
	}
	// The probes above fail when ctx ends during them, and would pass their failure off as
	// what the server can do (no cache reset, no version): an interrupted boot is no boot.
	if err := ctx.Err(); err != nil {
		return s.bootFailed(err)
	}
	s.log.note("ready after %s at %s (model %q, version %q)", s.bootTime.Round(time.Millisecond), s.baseURL, s.model, s.version)
	fmt.Fprintf(s.progress, "%s: ready after %s at %s\n", s.engine, s.bootTime.Round(100*time.Millisecond), s.baseURL)
	return nil
}

// versionPaths returns the launch's version paths, the first that answers counting.
func (s *Server) versionPaths() []string {
	var out []string
	if s.launch.VersionPath != "" {
		out = append(out, s.launch.VersionPath)
	}
	return append(out, s.launch.VersionFallbacks...)
}

// hook returns what AfterReady and ServedModel may use.
func (s *Server) hook() *Hook {
	env := s.serverEnv
	if env == nil {
		env = os.Environ()
	}
	return &Hook{
		Engine: s.engine, BaseURL: s.baseURL, Model: s.model, Env: env, Dir: s.dir,
		api: s.api, log: s.log, progress: s.progress,
	}
}

// modelFromList picks the served model name from GET /v1/models: the configured name when it
// is listed, else the first id, else the configured name.
func (s *Server) modelFromList(ctx context.Context, h *Hook) string {
	b, err := h.Get(ctx, "/v1/models")
	if err != nil {
		s.log.note("model list unavailable, using %q: %v", s.model, err)
		return s.model
	}
	ids := modelIDs(b)
	for _, id := range ids {
		if id == s.model {
			return id
		}
	}
	if len(ids) > 0 {
		if s.model != "" {
			s.log.note("server lists %q, not %q; requests will use %q", ids, s.model, ids[0])
		}
		return ids[0]
	}
	return s.model
}

// modelIDs reads the ids of an OpenAI model list, those that are empty left out; nil when b
// is not one.
func modelIDs(b []byte) []string {
	models, err := openai.ParseModels(b)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// waitReady polls each readiness path in turn until it answers 200, the process exits, the
// ready timeout passes or ctx is done.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := s.startedAt.Add(s.timeout)
	for _, p := range s.launch.ReadyPaths {
		if err := s.poll(ctx, p, deadline); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) poll(ctx context.Context, path string, deadline time.Time) error {
	url := s.baseURL + path
	interval := 200 * time.Millisecond
	var lastNote time.Time
	var last string  // the last answer, for the timeout message
	var refused bool // whether that answer was a refused connection
	for {
		// A request near the deadline still gets a moment, so that the last answer says
		// something about the server rather than about the clock.
		timeout := min(5*time.Second, max(time.Until(deadline), 500*time.Millisecond))
		status, location, err := s.probe(ctx, path, timeout)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded) && timeout < 5*time.Second && last != "":
			// Cut short by the ready timeout: keep the previous, complete answer.
		case err != nil:
			last, refused = describeGetError(err), errors.Is(err, syscall.ECONNREFUSED)
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return &bootFailure{
				reason: fmt.Sprintf("GET %s answered %d %s", path, status, http.StatusText(status)),
				hint:   authHint(s.engine, s.launch.APIKey != ""),
			}
		case status/100 == 3:
			// A redirect does not go away by waiting, and the runner follows none.
			return &bootFailure{
				reason: fmt.Sprintf("GET %s answered %d %s, a redirect to %s", path, status, http.StatusText(status), openai.RedirectTarget(location)),
				hint:   "the runner follows no redirects (they would add a hop to every measured request): point server.url at the address the server answers on",
			}
		default:
			last, refused = fmt.Sprintf("answered %d %s", status, http.StatusText(status)), false
		}
		now := time.Now()
		if !now.Before(deadline) {
			hint := fmt.Sprintf("raise server.ready_timeout (now %s) if the server needs longer to load, or check that GET %s is its readiness path", s.timeout, path)
			if s.cmd == nil && refused {
				// engine: endpoint starts nothing, so a refused connection is no slow start.
				hint = fmt.Sprintf("nothing listens at %s: start the server there, or correct server.url", s.baseURL)
			}
			return &bootFailure{
				reason: fmt.Sprintf("not ready after %s: GET %s %s", s.timeout, path, last),
				hint:   hint,
			}
		}
		if lastNote.IsZero() {
			fmt.Fprintf(s.progress, "%s: waiting for %s\n", s.engine, url)
			lastNote = now
		} else if now.Sub(lastNote) >= 10*time.Second {
			fmt.Fprintf(s.progress, "%s: waiting for %s (%s, %s)\n", s.engine, url, now.Sub(s.startedAt).Round(time.Second), last)
			lastNote = now
		}
		timer := time.NewTimer(min(interval, time.Until(deadline)))
		select {
		case <-s.exited():
			timer.Stop()
			return &bootFailure{exited: true}
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		interval = min(interval*3/2, time.Second)
	}
}

// exited returns a channel closed when the server process has exited; nil (never ready) for a
// server without a process.
func (s *Server) exited() <-chan struct{} {
	if s.cmd == nil {
		return nil
	}
	return s.done
}

// probe sends one readiness request, given timeout to answer, and returns its status and, for
// a redirect, where it points (see openai.Location).
func (s *Server) probe(ctx context.Context, path string, timeout time.Duration) (int, string, error) {
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.api.Probe(ctx, path)
}

// describeGetError shortens a failed readiness request to what matters.
func describeGetError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.Is(err, context.DeadlineExceeded):
		return "did not answer in time"
	}
	return "failed: " + err.Error()
}

// terminate sends SIGTERM to the server's process group, once. It may run from exec's
// context watcher before Start has read the pid, so it takes it from the process itself.
func (s *Server) terminate() {
	s.stopping.Store(true)
	s.termOnce.Do(func() {
		pgid := s.cmd.Process.Pid
		s.log.note("stopping: SIGTERM to process group %d", pgid)
		killGroup(pgid, syscall.SIGTERM)
	})
}

// Stop ends the server: SIGTERM to its whole process group, then, after the grace period (or
// when ctx is done), SIGKILL to whatever is left of the group. It waits for the process to
// exit and, for a server that was ready, for its port to be free again, so that the next
// server can take it. It returns an error when the group had to be killed or the port stayed
// taken; a server that stopped on SIGTERM is no error, whatever its exit status (see
// ExitCode). Stop is idempotent: later calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	defer s.api.CloseIdleConnections()
	defer s.cleanupDir()
	s.stopping.Store(true)
	if s.cmd == nil {
		close(s.done)
		return nil
	}
	select {
	case <-s.done:
	default:
		s.terminate()
	}
	var errs []error
	graceEnd := time.Now().Add(s.grace)
	if !waitClosed(ctx, s.done, graceEnd) {
		s.log.note("still running %s after SIGTERM: SIGKILL to process group %d", s.grace, s.pgid)
		killGroup(s.pgid, syscall.SIGKILL)
		<-s.done
		errs = append(errs, fmt.Errorf("%s: server did not stop within %s of SIGTERM; killed its process group", s.engine, s.grace))
	}
	// The group leader is gone; the rest of the group may still be shutting down.
	if left := waitGroupEmpty(ctx, s.pgid, graceEnd); len(left) > 0 {
		s.log.note("processes %v of group %d still running after SIGTERM: SIGKILL", left, s.pgid)
		killGroup(s.pgid, syscall.SIGKILL)
		if left := waitGroupEmpty(context.Background(), s.pgid, time.Now().Add(5*time.Second)); len(left) > 0 {
			errs = append(errs, fmt.Errorf("%s: processes %v of the server's group survived SIGKILL", s.engine, left))
		} else if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%s: %d process(es) of the server's group did not stop within %s of SIGTERM; killed them", s.engine, len(left), s.grace))
		}
	}
	if s.ready.Load() {
		if err := waitPortFree(ctx, s.host, s.port, s.portWait); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.engine, err))
		}
	}
	s.log.note("stopped: %s", s.exitStatus())
	return errors.Join(errs...)
}

// waitClosed waits until ch is closed (true), or until the deadline or ctx (false).
func waitClosed(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitGroupEmpty polls until no live process is left in the process group, or until the
// deadline or ctx; it returns the pids still alive.
func waitGroupEmpty(ctx context.Context, pgid int, deadline time.Time) []int {
	for {
		left := groupMembers(pgid)
		if len(left) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) cleanupDir() {
	if s.ownDir && s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Done returns a channel that is closed once the server process has exited (for engine:
// endpoint, once Stop was called).
func (s *Server) Done() <-chan struct{} { return s.done }

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Err returns nil while the server runs or after it was asked to stop, and an *ExitError when
// it exited on its own, quoting its log.
func (s *Server) Err() error {
	if !s.Exited() || s.stopping.Load() {
		return nil
	}
	return &ExitError{Engine: s.engine, Status: s.exitStatus(), ExitCode: s.ExitCode(),
		Hint: s.log.hints.hint(), LogTail: s.log.lines(), Log: s.log.name}
}

// Wait blocks until the server process exits and returns Err.
func (s *Server) Wait() error {
	<-s.done
	return s.Err()
}

// ExitCode returns the exit status of the server process once it has exited; -1 while it
// runs, when a signal ended it, or when there is no process.
func (s *Server) ExitCode() int {
	s.exitMu.Lock()
	defer s.exitMu.Unlock()
	if s.state == nil {
		return -1
	}
	return s.state.ExitCode()
}

// exitStatus describes how the process ended, e.g. "status 1" or "signal killed".
func (s *Server) exitStatus() string {
	s.exitMu.Lock()
	defer s.exitMu.Unlock()
	if s.state == nil {
		if s.cmd == nil {
			return "no process"
		}
		return "still running"
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("status %d", s.state.ExitCode())
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

// CanResetCache reports whether the server offers a prefix cache reset (it answered the reset
// request Start sent once the server was ready).
func (s *Server) CanResetCache() bool { return s.canReset }

// CacheResetMechanism says how ResetCache empties the cache, e.g. "POST /reset_prefix_cache",
// or, for llama-server, that every request asks not to reuse it; "" when the server offers no
// reset.
func (s *Server) CacheResetMechanism() string {
	switch {
	case !s.canReset:
		return ""
	case s.launch.ResetMechanism != "":
		return s.launch.ResetMechanism
	case s.launch.ResetPath != "":
		return "POST " + s.launch.ResetPath
	}
	return "engine-specific reset"
}

// CacheResetFields returns the request body fields that, with cache: reset, every measured
// request must carry so that the server does not reuse its cache (llama-server:
// {"cache_prompt": false}); nil when the reset needs none or the server offers no reset.
func (s *Server) CacheResetFields() map[string]any {
	if !s.canReset || len(s.launch.ResetFields) == 0 {
		return nil
	}
	return maps.Clone(s.launch.ResetFields)
}

// ResetCache empties the server's prefix cache.
func (s *Server) ResetCache(ctx context.Context) error {
	if !s.canReset {
		return fmt.Errorf("%s: the server offers no prefix cache reset", s.engine)
	}
	if err := s.reset(ctx, s.hook()); err != nil {
		return fmt.Errorf("reset prefix cache: %w", err)
	}
	return nil
}

// reset empties the prefix cache the launch's way.
func (s *Server) reset(ctx context.Context, h *Hook) error {
	if s.launch.Reset != nil {
		return s.launch.Reset(ctx, h)
	}
	_, err := h.Post(ctx, s.launch.ResetPath, nil)
	return err
}

// LogTail returns the last lines the server printed, secrets redacted.
func (s *Server) LogTail() []string { return s.log.lines() }

// exitZeroHint says what to do about a server that exited with status 0 before it was ready:
// it ran and ended as if asked to. vLLM deprecated `python -m vllm.entrypoints.openai.api_server`
// for `vllm serve`, and in recent trees the module no longer starts a server when run with -m
// (vllm/entrypoints/openai/api_server.py keeps its functions for `vllm serve`).
func exitZeroHint(engine string, argv []string) string {
	if engine == "vllm" && slices.Contains(argv, "vllm.entrypoints.openai.api_server") {
		return "python -m vllm.entrypoints.openai.api_server exited at once with status 0: this vLLM release no longer starts a server that way; remove server.entrypoint (the default is vllm serve)"
	}
	return "the server ended by itself with status 0 before it answered: check that its command line starts a server that stays up (a --help or --version in it, a wrapper that forks and exits)"
}

// missingHint says what to do when an engine's executable is not on PATH.
func missingHint(engine, argv0 string) string {
	switch {
	case engine == "vllm" && argv0 == "vllm":
		return "install vLLM (pip install vllm) or put its bin directory on PATH (server.env.PATH); an older install without the vllm command: set server.entrypoint: api_server"
	case argv0 == "python" || argv0 == "python3":
		return "no python on PATH: activate the environment that has the engine installed, or set server.env.PATH"
	}
	return fmt.Sprintf("%s is not on PATH: install it, or set server.env.PATH to the directory that holds it", argv0)
}

// findExecutable finds a server's executable argv0 on the PATH of env, and returns its path
// and the name it runs under. Many images have python3 and no python: where python is
// missing, it takes python3, as a user typing the command would.
func findExecutable(argv0 string, env []string) (path, name string, err error) {
	path, err = lookPath(argv0, env)
	if err != nil && argv0 == "python" {
		if p, err3 := lookPath("python3", env); err3 == nil {
			return p, "python3", nil
		}
	}
	return path, argv0, err
}

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

// freePort asks the kernel for a free TCP port on host. Another process may take it before the
// server binds it; that shows as a boot failure with the port hint.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", joinHostPort(host, 0))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports, as an error, whether host:port is taken.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", joinHostPort(host, port))
	if err != nil {
		return err
	}
	return l.Close()
}

// waitPortFree polls until host:port can be bound again.
func waitPortFree(ctx context.Context, host string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := portFree(host, port)
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return fmt.Errorf("port %d on %s still in use %s after the server stopped: %w", port, host, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// Preflight checks, without starting anything, that a server config can be launched on this
// machine: that its preset accepts it and that the executable it would run can be found (on
// the PATH that server.env gives it, if any). It returns a *BootError with the engine's hint
// when not, so that a run can fail at once, before it writes anything. An engine that starts
// no process (endpoint) passes.
func Preflight(srv experiment.Server, executable string) error {
	name, host := engineName(srv), hostOf(srv)
	preset, err := lookup(name)
	if err != nil {
		return fmt.Errorf("server.engine: %w", err)
	}
	port := srv.Port
	if port == 0 {
		port = 1 // a placeholder: presets only write it into argv and env
	}
	// The scratch directory is not made: presets only name paths inside it.
	t := Target{Host: host, Port: port, Executable: executable, Dir: filepath.Join(os.TempDir(), "runner-preflight")}
	l, err := preset(srv, t)
	if err != nil {
		return &BootError{Engine: name, Reason: "cannot start: " + err.Error(), ExitCode: -1}
	}
	if len(l.Argv) == 0 {
		return nil
	}
	argv0 := l.Argv[0]
	env := mergeEnv(os.Environ(), l.Env, srv.Env)
	if _, _, err := findExecutable(argv0, env); err != nil {
		return &BootError{Engine: name, Reason: "cannot start: " + err.Error(), Hint: missingHint(name, argv0), ExitCode: -1}
	}
	return nil
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
