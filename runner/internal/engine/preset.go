// Package engine boots and supervises inference servers. A preset per engine turns a server
// config into a Launch (an argv, an environment, readiness checks); Start runs it in its own
// process group, waits until it answers, and Stop ends the whole group.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
)

// Preset turns a server config into a Launch for one engine. It starts nothing: Start calls it
// once the host, port and scratch directory are known.
type Preset func(srv experiment.Server, t Target) (*Launch, error)

// Target is where a preset's server must listen and what it may use while it runs.
type Target struct {
	Host       string // bind host, e.g. 127.0.0.1
	Port       int    // the port to listen on, already chosen (a free one when the experiment gave 0)
	Executable string // the runner's own executable, for servers the runner itself provides
	Dir        string // a scratch directory that lives as long as the server; removed after Stop
}

// Addr returns Target's host and port as host:port.
func (t Target) Addr() string { return joinHostPort(t.Host, t.Port) }

// URL returns the http base URL of Target, e.g. http://127.0.0.1:8000. A server bound to all
// interfaces (0.0.0.0, ::) is reached on loopback.
func (t Target) URL() string {
	host := t.Host
	switch host {
	case "0.0.0.0", "":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	return "http://" + joinHostPort(host, t.Port)
}

// Launch is how to start one server and how to tell when it is ready.
type Launch struct {
	// Argv is the server's command line. Argv[0] is looked up on PATH (the PATH in the server's
	// environment when server.env sets one). An empty Argv means there is no process to start:
	// the server is already running at BaseURL (engine: endpoint).
	Argv []string
	// Env holds environment variables for the server on top of the runner's own; server.env
	// from the experiment overrides them.
	Env map[string]string
	// BaseURL is the root of the server's HTTP API, with no trailing slash and no /v1.
	BaseURL string
	// ReadyPaths are GET paths that must all answer 200, in order, before the server is ready.
	ReadyPaths []string
	// VersionPath is a GET path whose JSON object carries the engine version in a "version" (or
	// "build_info") string; empty when the engine reports none.
	VersionPath string
	// VersionFallbacks are further GET paths tried in turn when VersionPath does not answer
	// (SGLang renamed /get_server_info to /server_info).
	VersionFallbacks []string
	// ResetPath is a POST path that empties the engine's prefix cache; empty when there is none.
	// Start probes it once the server is ready, and CanResetCache reports whether it answered.
	ResetPath string
	// Reset, when set, empties the engine's prefix cache by other means than a POST path (ollama:
	// unload the model and load it again). Start probes it once the server is ready, as it does
	// ResetPath; ResetPath is not used when Reset is set.
	Reset func(ctx context.Context, h *Hook) error
	// ResetFields are request body fields that keep a measured request from reusing the prefix
	// cache; with cache: reset the runner merges them into every request (llama-server:
	// "cache_prompt": false). Reset, when set too, is still probed once the server is ready.
	ResetFields map[string]any
	// ResetMechanism says in words how the preset empties the cache, for the records, e.g.
	// "POST /reset_prefix_cache"; empty means ResetPath's "POST <path>".
	ResetMechanism string
	// AfterReady, when set, runs once the ready paths answer and before the server counts as
	// ready: register and preload a model, warm a cache. Its time counts in the boot time.
	AfterReady func(ctx context.Context, h *Hook) error
	// ServedModel, when set, returns the model name requests must use. Without it Start asks
	// GET /v1/models: the id equal to server.model, else the first id listed, else server.model.
	ServedModel func(ctx context.Context, h *Hook) (string, error)
	// Secrets are values to redact from every argv, log line and error the runner shows.
	Secrets []string
	// APIKey is sent as a bearer token on every request the runner makes, readiness included.
	APIKey string
	// Notes are warnings for the user, e.g. a setting this engine ignores; Start prints them.
	Notes []string
}

// Hook gives AfterReady and ServedModel access to the booted server.
type Hook struct {
	Engine  string   // the engine name, e.g. ollama
	BaseURL string   // the server's root URL
	Model   string   // server.model as configured
	Env     []string // the server's full environment, for commands that talk to it
	Dir     string   // the server's scratch directory

	api      *openai.Client // the server's client: its BaseURL, API key and no-redirect policy
	log      *serverLog     // the server log
	progress io.Writer      // the user's progress stream
}

// Logf writes one progress line, prefixed with the engine name.
func (h *Hook) Logf(format string, args ...any) {
	fmt.Fprintf(h.progress, "%s: %s\n", h.Engine, fmt.Sprintf(format, args...))
}

// Run runs a command with the server's environment, in its own process group, with its output
// going to the server log. A command that fails returns an error quoting its last output lines.
func (h *Hook) Run(ctx context.Context, argv ...string) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: run: empty command", h.Engine)
	}
	path, err := lookPath(argv[0], h.Env)
	if err != nil {
		return fmt.Errorf("%s: run %s: %w", h.Engine, argv[0], err)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = h.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	tail := newTail(20)
	log := h.log.sibling()
	out := &lockedWriter{w: io.MultiWriter(log, tail)}
	cmd.Stdout, cmd.Stderr = out, out
	log.note("%s", strings.Join(argv, " "))
	// Pdeathsig is tied to the starting thread; keep it for as long as the command runs.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	log.flush()
	if err != nil {
		return fmt.Errorf("%s: %s: %w%s", h.Engine, strings.Join(argv, " "), err, quoteLines(tail.lines()))
	}
	return nil
}

// Get sends GET path to the server and returns the body of a 2xx answer. A body over the
// client's limit for the path (openai.MaxMetricsBody for /metrics, openai.MaxJSONBody for any
// other) is an error naming that limit; a redirect is not followed.
func (h *Hook) Get(ctx context.Context, path string) ([]byte, error) {
	return h.call(ctx, http.MethodGet, path, nil)
}

// Post sends body, encoded as JSON (nil sends no body), to path and returns the body of a 2xx
// answer. An answer with another status is an error that unwraps to its *openai.HTTPError.
func (h *Hook) Post(ctx context.Context, path string, body any) ([]byte, error) {
	return h.call(ctx, http.MethodPost, path, body)
}

// call sends one request with the server's client and words a failure the engine's way, after
// the engine and the path: "vllm: POST /reset_prefix_cache: 404 Not Found: ...".
func (h *Hook) call(ctx context.Context, method, path string, in any) ([]byte, error) {
	b, err := h.api.Call(ctx, method, path, in)
	var ce *openai.CallError
	if err == nil || !errors.As(err, &ce) {
		return b, err
	}
	at := fmt.Sprintf("%s: %s %s", h.Engine, method, path)
	var he *openai.HTTPError
	switch {
	case ce.Stage == openai.StageEncode:
		return nil, fmt.Errorf("%s: encode body: %w", at, ce.Err)
	case ce.Stage == openai.StageRead:
		return nil, fmt.Errorf("%s: read body: %w", at, ce.Err)
	case !errors.As(ce.Err, &he):
		return nil, fmt.Errorf("%s: %w", at, ce.Err)
	case he.Redirect():
		return nil, &answerError{fmt.Sprintf("%s: %s, a redirect to %s, which the runner does not follow", at, he.StatusLine, openai.RedirectTarget(he.Location)), he}
	}
	// Only the start of a failed answer is quoted.
	return nil, &answerError{fmt.Sprintf("%s: %s: %s", at, he.StatusLine, excerpt(he.Body, 200)), he}
}

// answerError is an answer other than 2xx, worded as the engine's error; it unwraps to the
// *openai.HTTPError, so that a preset can tell the status.
type answerError struct {
	msg string
	err *openai.HTTPError
}

func (e *answerError) Error() string { return e.msg }
func (e *answerError) Unwrap() error { return e.err }

// builtin attaches a preset to every engine of the engine table, by name.
var builtin = map[string]Preset{
	"vllm":     vllmPreset,
	"sglang":   sglangPreset,
	"llamacpp": llamaCppPreset,
	"ollama":   ollamaPreset,
	"command":  commandPreset,
	"sim":      simPreset,
	"endpoint": endpointPreset,
}

var (
	presetsMu sync.RWMutex
	presets   = maps.Clone(builtin)
)

// DefaultEngine is the engine used when server.engine is empty.
const DefaultEngine = enginefacts.Default

// Register makes a preset available under an engine name that is not in the engine table, for
// a program or a test that brings its own server. It panics when the name is already taken.
func Register(name string, p Preset) {
	presetsMu.Lock()
	defer presetsMu.Unlock()
	if _, dup := presets[name]; dup {
		panic("engine: preset " + name + " registered twice")
	}
	presets[name] = p
}

// Engines returns the names of the registered presets, sorted.
func Engines() []string {
	presetsMu.RLock()
	defer presetsMu.RUnlock()
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookup returns the preset for an engine name; "" is DefaultEngine.
func lookup(name string) (Preset, error) {
	if name == "" {
		name = DefaultEngine
	}
	presetsMu.RLock()
	p, ok := presets[name]
	presetsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (known: %s)", name, strings.Join(Engines(), ", "))
	}
	return p, nil
}
