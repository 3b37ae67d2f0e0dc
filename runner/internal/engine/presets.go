package engine

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

// vllmPreset runs vLLM's OpenAI-compatible server: `vllm serve MODEL`, or, with
// server.entrypoint: api_server, `python -m vllm.entrypoints.openai.api_server --model MODEL`
// for installs older than the vllm command. It sets VLLM_SERVER_DEV_MODE=1, which the prefix
// cache reset (POST /reset_prefix_cache) needs; server.env may turn it off again.
func vllmPreset(srv experiment.Server, t Target) (*Launch, error) {
	if srv.Model == "" {
		return nil, errors.New("server.model is required")
	}
	var argv []string
	switch srv.Entrypoint {
	case "", "serve":
		argv = []string{"vllm", "serve", srv.Model}
	case "api_server":
		argv = []string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", srv.Model}
	default:
		return nil, fmt.Errorf("server.entrypoint %q: want serve or api_server", srv.Entrypoint)
	}
	argv = vllmModelFlags(argv, srv)
	argv = append(argv, "--host", t.Host, "--port", strconv.Itoa(t.Port))
	return vllmLaunch(srv, t, argv, "vllm"), nil
}

// vllmModelFlags appends vLLM's --dtype and --max-model-len for server.dtype and
// server.max_model_len, when the experiment sets them. The simulator takes the same flags.
func vllmModelFlags(argv []string, srv experiment.Server) []string {
	if srv.Dtype != "" {
		argv = append(argv, "--dtype", srv.Dtype)
	}
	if srv.MaxModelLen > 0 {
		argv = append(argv, "--max-model-len", strconv.Itoa(srv.MaxModelLen))
	}
	return argv
}

// vllmLaunch is the Launch of a server that speaks vLLM's API, vLLM itself or the simulator
// that imitates it: argv followed by server.args, VLLM_SERVER_DEV_MODE=1 (which the prefix
// cache reset needs), and vLLM's health, version and reset paths. engine names the engine in
// the notes on ignored fields.
func vllmLaunch(srv experiment.Server, t Target, argv []string, engine string) *Launch {
	return &Launch{
		Argv:        append(argv, srv.Args...),
		Env:         map[string]string{"VLLM_SERVER_DEV_MODE": "1"},
		BaseURL:     t.URL(),
		ReadyPaths:  []string{"/health", "/v1/models"},
		VersionPath: "/version",
		ResetPath:   "/reset_prefix_cache",
		Reset:       resetWhenIdle("/reset_prefix_cache"),
		APIKey:      apiKey(srv),
		Notes:       ignored(srv, engine),
	}
}

// sglangPreset runs `python -m sglang.launch_server --model-path M --host H --port P`, with
// --dtype and --context-length from server.dtype and server.max_model_len. SGLang's /health
// answers 503 until its warm-up is done.
func sglangPreset(srv experiment.Server, t Target) (*Launch, error) {
	if srv.Model == "" {
		return nil, errors.New("server.model is required")
	}
	argv := []string{"python", "-m", "sglang.launch_server", "--model-path", srv.Model,
		"--host", t.Host, "--port", strconv.Itoa(t.Port)}
	if srv.Dtype != "" {
		argv = append(argv, "--dtype", srv.Dtype)
	}
	if srv.MaxModelLen > 0 {
		argv = append(argv, "--context-length", strconv.Itoa(srv.MaxModelLen))
	}
	// SGLang serves /metrics only when asked: the runner reads its requests' server-side
	// timings there.
	if !slices.Contains(srv.Args, "--enable-metrics") {
		argv = append(argv, "--enable-metrics")
	}
	argv = append(argv, srv.Args...)
	return &Launch{
		Argv:       argv,
		BaseURL:    t.URL(),
		ReadyPaths: []string{"/health", "/v1/models"},
		// SGLang deprecated /get_server_info for /server_info (http_server.py, v0.4.7 and
		// later); older releases answer only the first.
		VersionPath:      "/server_info",
		VersionFallbacks: []string{"/get_server_info"},
		ResetPath:        "/flush_cache",
		Reset:            sglangReset,
		APIKey:           apiKey(srv),
		Notes:            ignored(srv, "sglang"),
	}, nil
}

// llamaCppPreset runs llama.cpp's `llama-server -m MODEL --host H --port P`, with -c from
// server.max_model_len. /health answers 503 while the model loads. The GGUF file fixes the
// weights' type, so server.dtype does not apply. cache: reset sends "cache_prompt": false with
// every request (see llamacpp.go).
func llamaCppPreset(srv experiment.Server, t Target) (*Launch, error) {
	if srv.Model == "" {
		return nil, errors.New("server.model is required (the path of a GGUF file)")
	}
	argv := []string{"llama-server", "-m", srv.Model, "--host", t.Host, "--port", strconv.Itoa(t.Port)}
	if srv.MaxModelLen > 0 {
		argv = append(argv, "-c", strconv.Itoa(srv.MaxModelLen))
	}
	// llama-server serves /metrics only with --metrics: its counters of prompt and decode
	// time are the server-side timings the runner reads.
	if !slices.Contains(srv.Args, "--metrics") {
		argv = append(argv, "--metrics")
	}
	argv = append(argv, srv.Args...)
	return &Launch{
		Argv:           argv,
		BaseURL:        t.URL(),
		ReadyPaths:     []string{"/health", "/v1/models"},
		VersionPath:    "/props",
		Reset:          llamaReset(),
		ResetFields:    llamaResetFields,
		ResetMechanism: llamaResetMechanism,
		APIKey:         apiKey(srv),
		Notes:          ignored(srv, "llamacpp"),
	}, nil
}

// commandPreset runs any other server from server.command, replacing {host}, {port} and
// {model} in its arguments (Start replaces them in server.env values, for every engine), and
// polls server.ready_path (by default /v1/models).
func commandPreset(srv experiment.Server, t Target) (*Launch, error) {
	if len(srv.Command) == 0 {
		return nil, errors.New("server.command is required: the server's argv, e.g. [my-server, --port, \"{port}\"]")
	}
	r := placeholders(srv, t)
	argv := make([]string, 0, len(srv.Command)+len(srv.Args))
	for _, a := range srv.Command {
		argv = append(argv, r.Replace(a))
	}
	for _, a := range srv.Args {
		argv = append(argv, r.Replace(a))
	}
	ready := srv.ReadyPath
	if ready == "" {
		ready = "/v1/models"
	}
	if !strings.HasPrefix(ready, "/") {
		return nil, fmt.Errorf("server.ready_path %q: want a path starting with /", srv.ReadyPath)
	}
	l := &Launch{
		Argv:       argv,
		BaseURL:    t.URL(),
		ReadyPaths: []string{ready},
		APIKey:     apiKey(srv),
		Notes:      ignored(srv, "command"),
	}
	return l, nil
}

// simPreset runs the runner's own simulated server, `runner sim --host H --port P`, through the
// same supervision as a real engine. Like vLLM it gets --model, --dtype and --max-model-len when
// the experiment sets them, and VLLM_SERVER_DEV_MODE=1.
func simPreset(srv experiment.Server, t Target) (*Launch, error) {
	argv := []string{t.Executable, "sim", "--host", t.Host, "--port", strconv.Itoa(t.Port)}
	if srv.Model != "" {
		argv = append(argv, "--model", srv.Model)
	}
	return vllmLaunch(srv, t, vllmModelFlags(argv, srv), "sim"), nil
}

// endpointPreset measures a server that is already running at server.url: nothing is started
// or stopped. Readiness polls server.ready_path (by default /v1/models).
func endpointPreset(srv experiment.Server, t Target) (*Launch, error) {
	if srv.URL == "" {
		return nil, errors.New("server.url is required, e.g. http://127.0.0.1:8000")
	}
	// A file's server.url was checked when it was read; a server built in code gets the same
	// check, and the same care not to quote a password.
	if msg := experiment.CheckURL(srv.URL); msg != "" {
		return nil, fmt.Errorf("server.url: %s", msg)
	}
	base := strings.TrimRight(srv.URL, "/")
	// The OpenAI convention gives base URLs with /v1; the runner adds /v1 itself.
	base = strings.TrimSuffix(base, "/v1")
	ready := srv.ReadyPath
	if ready == "" {
		ready = "/v1/models"
	}
	if !strings.HasPrefix(ready, "/") {
		return nil, fmt.Errorf("server.ready_path %q: want a path starting with /", srv.ReadyPath)
	}
	key := apiKey(srv)
	if srv.APIKeyEnv != "" && key == "" {
		if redact.LooksLikeKey(srv.APIKeyEnv) {
			return nil, errors.New("server.api_key_env looks like a key, not the name of an environment variable: put the key in a variable and name that variable")
		}
		return nil, fmt.Errorf("server.api_key_env names %s, which is not set or empty", srv.APIKeyEnv)
	}
	// Go's HTTP client refuses such a header on every request, and readiness would retry it
	// until server.ready_timeout; say so at once, naming the variable and never the key.
	if msg := headerValueProblem(key); msg != "" {
		return nil, fmt.Errorf("server.api_key_env names %s, whose value cannot be sent in an HTTP header: it holds %s; set it to the key alone", srv.APIKeyEnv, msg)
	}
	// A running vLLM answers /version, and /reset_prefix_cache when it was started with
	// VLLM_SERVER_DEV_MODE=1; other servers answer 404 and are recorded as having neither.
	return &Launch{
		BaseURL:     base,
		ReadyPaths:  []string{ready},
		VersionPath: "/version",
		ResetPath:   "/reset_prefix_cache",
		Reset:       resetWhenIdle("/reset_prefix_cache"),
		APIKey:      key,
		Notes:       ignored(srv, "endpoint"),
	}, nil
}

// placeholders replaces {host}, {port} and {model} with the server's bind host, its port and
// server.model.
func placeholders(srv experiment.Server, t Target) *strings.Replacer {
	return strings.NewReplacer("{host}", t.Host, "{port}", strconv.Itoa(t.Port), "{model}", srv.Model)
}

// expandEnv returns server.env with the placeholders replaced in its values; nil when it is
// empty.
func expandEnv(srv experiment.Server, t Target) map[string]string {
	if len(srv.Env) == 0 {
		return nil
	}
	r := placeholders(srv, t)
	env := make(map[string]string, len(srv.Env))
	for k, v := range srv.Env {
		env[k] = r.Replace(v)
	}
	return env
}

// headerValueProblem describes the first byte of v that an HTTP header value cannot hold (a
// control character other than tab, as RFC 9110 and Go's net/http rule), without quoting v;
// "" when v is valid.
func headerValueProblem(v string) string {
	for i := 0; i < len(v); i++ {
		b := v[i]
		if (b >= 0x20 || b == '\t') && b != 0x7f {
			continue
		}
		what := fmt.Sprintf("a control character (0x%02x)", b)
		switch b {
		case '\n':
			what = "a line break (\\n)"
		case '\r':
			what = "a carriage return (\\r)"
		}
		where := fmt.Sprintf("at byte %d of %d", i+1, len(v))
		if i == len(v)-1 {
			where = "at its end"
		}
		return what + " " + where
	}
	return ""
}

// apiKey returns the key the runner sends: the value of the variable server.api_key_env names,
// or else the value of --api-key in server.args (vLLM, SGLang, llama.cpp and the simulator
// refuse requests without the key they were started with), or "".
func apiKey(srv experiment.Server) string {
	if srv.APIKeyEnv != "" {
		return os.Getenv(srv.APIKeyEnv)
	}
	for i, a := range srv.Args {
		if v, ok := strings.CutPrefix(a, "--api-key="); ok {
			return v
		}
		if a == "--api-key" && i+1 < len(srv.Args) && !strings.HasPrefix(srv.Args[i+1], "--") {
			return srv.Args[i+1]
		}
	}
	return ""
}

// ignored returns a note for each server field that srv sets although the engine's preset does
// not pass it on, as the engine table says. server.ready_timeout is never among them: the runner
// itself waits that long, whatever the engine.
func ignored(srv experiment.Server, engine string) []string {
	set := map[string]bool{
		"model":         srv.Model != "",
		"dtype":         srv.Dtype != "",
		"max_model_len": srv.MaxModelLen > 0,
		"host":          srv.Host != "",
		"port":          srv.Port != 0,
		"url":           srv.URL != "",
		"api_key_env":   srv.APIKeyEnv != "",
		"entrypoint":    srv.Entrypoint != "",
		"ready_path":    srv.ReadyPath != "",
		"args":          len(srv.Args) > 0,
		"env":           len(srv.Env) > 0,
		"command":       len(srv.Command) > 0,
	}
	e, _ := enginefacts.Lookup(engine)
	var out []string
	for _, f := range enginefacts.ServerFields {
		if set[f] && !e.Uses(f) {
			out = append(out, fmt.Sprintf("server.%s is not used by engine %s; ignoring it", f, engine))
		}
	}
	return out
}
