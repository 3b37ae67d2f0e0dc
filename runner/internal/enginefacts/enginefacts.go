// Package enginefacts is the one table of the inference engines the runner knows: for each, whether
// it boots a server process, which server fields an experiment file may set for it and which its
// preset passes on to the server, what it requires, its defaults, whether it can empty its
// prefix cache, and whether it serves a Prometheus /metrics. The experiment format validates and
// fills configs from this table, the engine package attaches a preset to every entry by name,
// the run reads which servers to scrape from it, and tests check the JSON schema and the presets
// against it. It imports nothing of the runner, so all of them can read it.
package enginefacts

import (
	"slices"
	"time"
)

// Default is the engine of a config that names none.
const Default = "vllm"

// Defaults shared by several engines of the table.
const (
	// DefaultHost is the address a booted server binds to when server.host is not set.
	DefaultHost = "127.0.0.1"
	// DefaultReadyTimeout is how long the runner waits for a booted server to become ready when
	// server.ready_timeout is not set and the engine has no shorter default.
	DefaultReadyTimeout = 10 * time.Minute
	// DefaultReadyPath is the path polled for readiness by engines that take server.ready_path.
	DefaultReadyPath = "/v1/models"
)

// ServerFields are the fields of an experiment's server section that an engine may take, by
// their names under server:, in the order the schema lists them. server.engine itself is not
// among them.
var ServerFields = []string{
	"model", "dtype", "max_model_len", "ready_timeout", "host", "port", "url", "api_key_env",
	"entrypoint", "ready_path", "args", "env", "command",
}

// Engine is what the runner knows about one inference engine.
type Engine struct {
	// Name is the value of server.engine.
	Name string
	// Boots is true for an engine the runner starts as a process, false for one it only
	// connects to.
	Boots bool
	// Fields are the server fields an experiment file may set for this engine; any other one
	// set is refused as not applying to it.
	Fields []string
	// Passes are the server fields the engine's preset passes on to the server (as a flag, in
	// its environment, or as how the runner reaches it). A field set but not passed on is
	// noted as ignored when the server starts. It may differ from Fields both ways: the file
	// accepts server.max_model_len for every engine because it bounds the prompt, and a
	// server built in code may set what the file refuses.
	Passes []string
	// Requires are the server fields an experiment file must set for this engine.
	Requires []string
	// Defaults are the values of the server fields, of type string, that a config leaves out.
	Defaults map[string]string
	// ReadyTimeout is the default of server.ready_timeout.
	ReadyTimeout time.Duration
	// CanReset is true for an engine whose preset can empty its prefix cache before every
	// request (for one the runner does not boot: if the running server offers it), so that
	// cache: reset is possible and is the default.
	CanReset bool
	// ResetEnv names an environment variable the cache reset needs set to 1, and that
	// server.env may turn off; "" when the reset needs none.
	ResetEnv string
	// KeyEnv names the environment variable the server itself also reads its API key from,
	// which the runner does not look at; "" when it has none.
	KeyEnv string
	// NoMetrics is true for an engine known to serve no Prometheus /metrics: the runner does
	// not scrape it for server-side timings, and records why (docs/metrics.md). An engine
	// that may serve one (endpoint, command) is scraped, and a scrape that finds nothing is
	// noted then.
	NoMetrics bool
	// PromptFloors are, by request API (completions, chat), the fewest prompt tokens the
	// engine bills for any prompt: its shortest, one word with the special tokens or chat
	// template it adds. Only an engine whose tokenizer and template are fixed has them (the
	// simulator); a prompt_tokens below one cannot be built, and validation warns of it.
	PromptFloors map[string]int
}

// bootFields are the server fields of every engine the runner boots: the address it binds to,
// and the arguments and environment the experiment adds.
var bootFields = []string{"host", "port", "args", "env"}

// table is every engine, the default first. It is the one place an engine is described; its
// preset is attached by name in the engine package.
var table = []Engine{
	{
		Name: "vllm", Boots: true,
		Fields:       boot("model", "dtype", "max_model_len", "ready_timeout", "entrypoint"),
		Passes:       boot("model", "dtype", "max_model_len", "entrypoint", "api_key_env"),
		Requires:     []string{"model"},
		Defaults:     map[string]string{"host": DefaultHost, "entrypoint": "serve"},
		ReadyTimeout: DefaultReadyTimeout,
		CanReset:     true, ResetEnv: "VLLM_SERVER_DEV_MODE", KeyEnv: "VLLM_API_KEY",
	},
	{
		Name: "sglang", Boots: true,
		Fields:       boot("model", "dtype", "max_model_len", "ready_timeout"),
		Passes:       boot("model", "dtype", "max_model_len", "api_key_env"),
		Requires:     []string{"model"},
		Defaults:     map[string]string{"host": DefaultHost},
		ReadyTimeout: DefaultReadyTimeout,
		CanReset:     true,
	},
	{
		// llama-server: the GGUF file fixes the weights' type. It has no whole-cache reset:
		// cache: reset asks every request not to reuse the cache ("cache_prompt": false).
		Name: "llamacpp", Boots: true,
		Fields:       boot("model", "max_model_len", "ready_timeout"),
		Passes:       boot("model", "max_model_len", "api_key_env"),
		Requires:     []string{"model"},
		Defaults:     map[string]string{"host": DefaultHost},
		ReadyTimeout: DefaultReadyTimeout,
		CanReset:     true, KeyEnv: "LLAMA_API_KEY",
	},
	{
		// ollama is configured through its environment: server.args is accepted and ignored.
		Name: "ollama", Boots: true,
		Fields:       boot("model", "max_model_len", "ready_timeout"),
		Passes:       []string{"model", "max_model_len", "api_key_env", "host", "port", "env"},
		Requires:     []string{"model"},
		Defaults:     map[string]string{"host": DefaultHost},
		ReadyTimeout: DefaultReadyTimeout,
		CanReset:     true, NoMetrics: true,
	},
	{
		// Any server from server.command, unknown to the runner: it cannot reset its cache.
		Name: "command", Boots: true,
		Fields:       boot("model", "max_model_len", "ready_timeout", "ready_path", "command"),
		Passes:       boot("model", "api_key_env", "ready_path", "command"),
		Requires:     []string{"model", "command"},
		Defaults:     map[string]string{"host": DefaultHost, "ready_path": DefaultReadyPath},
		ReadyTimeout: DefaultReadyTimeout,
	},
	{
		// runner sim takes --dtype as vLLM does (it checks it against --gpu), so that an
		// experiment written for vLLM that sets server.dtype runs on the simulator as a dry run.
		Name: "sim", Boots: true,
		Fields:       boot("model", "dtype", "max_model_len", "ready_timeout"),
		Passes:       boot("model", "dtype", "max_model_len", "api_key_env"),
		Defaults:     map[string]string{"host": DefaultHost, "model": "sim-model"},
		ReadyTimeout: 30 * time.Second,
		CanReset:     true, ResetEnv: "VLLM_SERVER_DEV_MODE", KeyEnv: "VLLM_API_KEY",
		// Its toy tokenizer and chat template (runner/internal/sim) bill <s> and the shortest
		// synthesised prompt, one filler word of three tokens; in chat, the template's six
		// markers and line breaks around it too. A test in orchestrate checks them against
		// the simulator.
		PromptFloors: map[string]int{"completions": 4, "chat": 10},
	},
	{
		// A server already running at server.url; the reset is tried when the runner connects,
		// unless every config keeps the cache.
		Name:         "endpoint",
		Fields:       []string{"model", "max_model_len", "ready_timeout", "url", "api_key_env", "ready_path"},
		Passes:       []string{"model", "url", "api_key_env", "ready_path"},
		Requires:     []string{"model", "url"},
		Defaults:     map[string]string{"ready_path": DefaultReadyPath},
		ReadyTimeout: 30 * time.Second,
		CanReset:     true,
	},
}

// boot returns names followed by bootFields.
func boot(names ...string) []string { return slices.Concat(names, bootFields) }

// All returns every engine, the default first.
func All() []Engine { return slices.Clone(table) }

// Names returns the engine names in table order, the default first.
func Names() []string {
	out := make([]string, len(table))
	for i, e := range table {
		out[i] = e.Name
	}
	return out
}

// Lookup returns the engine called name; ok is false when there is none.
func Lookup(name string) (e Engine, ok bool) {
	i := slices.IndexFunc(table, func(e Engine) bool { return e.Name == name })
	if i < 0 {
		return Engine{}, false
	}
	return table[i], true
}

// Boots reports whether the engine called name starts a server process; false for an unknown
// name.
func Boots(name string) bool {
	e, ok := Lookup(name)
	return ok && e.Boots
}

// CanReset reports whether the engine called name can empty its prefix cache; false for an
// unknown name.
func CanReset(name string) bool {
	e, ok := Lookup(name)
	return ok && e.CanReset
}

// ServesMetrics reports whether the engine called name may serve a Prometheus /metrics; true
// for an unknown name (a preset registered in code), which the runner then tries.
func ServesMetrics(name string) bool {
	e, ok := Lookup(name)
	return !ok || !e.NoMetrics
}

// PromptFloor returns the fewest prompt tokens the engine called name bills on request API api
// (Engine.PromptFloors); ok is false when the table does not know it.
func PromptFloor(name, api string) (floor int, ok bool) {
	e, found := Lookup(name)
	if !found {
		return 0, false
	}
	floor, ok = e.PromptFloors[api]
	return floor, ok
}

// Takes reports whether an experiment file may set the server field for the engine.
func (e Engine) Takes(field string) bool { return slices.Contains(e.Fields, field) }

// Uses reports whether the engine's preset passes the server field on to the server.
func (e Engine) Uses(field string) bool { return slices.Contains(e.Passes, field) }

// Taking returns the names of the engines that take the server field, in table order.
func Taking(field string) []string {
	var out []string
	for _, e := range table {
		if e.Takes(field) {
			out = append(out, e.Name)
		}
	}
	return out
}

// Argv names where an experiment writes the server's own arguments: "server.command or
// server.args" for an engine that takes its whole command line from the file, "server.args"
// for one whose preset builds it and appends server.args, and "" for one that takes none.
func (e Engine) Argv() string {
	switch {
	case e.Uses("command"):
		return "server.command or server.args"
	case e.Uses("args"):
		return "server.args"
	}
	return ""
}
