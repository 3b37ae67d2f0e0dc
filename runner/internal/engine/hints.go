package engine

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
)

// hintInfo is what a hint may mention besides the matched log text.
type hintInfo struct {
	Engine string
	Host   string
	Port   int
}

// hintRule recognises one known failure in a server's log and says what to change.
type hintRule struct {
	name string
	keys []string // the regexp runs only on lines holding one of these
	re   *regexp.Regexp
	text func(m []string, in hintInfo) string
}

// hintRules are tried on every log line, and reported in this order.
var hintRules = []hintRule{
	{
		// vLLM refuses bfloat16 below compute capability 8.0 (Tesla T4 is 7.5, V100 7.0).
		name: "bf16",
		keys: []string{"Bfloat16"},
		re:   regexp.MustCompile(`Bfloat16 is only supported on GPUs with compute capability of at least [0-9.]+[.;](?: [Yy]our (.+?) GPU has compute capability (\d+(?:\.\d+)?))?`),
		text: func(m []string, in hintInfo) string {
			gpu := "this GPU"
			if m[1] != "" {
				gpu = fmt.Sprintf("this GPU (%s, compute capability %s)", m[1], m[2])
			}
			if in.passes("server.dtype") {
				return gpu + " has no bf16: set server.dtype: half"
			}
			return gpu + " has no bf16: pass --dtype half in " + in.argvOr("the server's arguments")
		},
	},
	{
		// vLLM V0: "The model's max seq len (32768) is larger than the maximum number of tokens
		// that can be stored in KV cache (7344)".
		name: "kv-cache",
		keys: []string{"max seq len"},
		re:   regexp.MustCompile(`max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)`),
		text: func(m []string, in hintInfo) string {
			return fmt.Sprintf("the KV cache holds %s tokens, less than max_model_len %s: %s to at most %s%s", m[2], m[1], in.lowerContext(), m[2], in.moreKVMemory())
		},
	},
	{
		// vLLM V1: "... Based on the available memory, the estimated maximum model length is
		// 5632."
		name: "kv-cache",
		keys: []string{"estimated maximum model length"},
		re:   regexp.MustCompile(`(?:max seq len \((\d+)\).*)?estimated maximum model length is (\d+)`),
		text: func(m []string, in hintInfo) string {
			of := ""
			if m[1] != "" {
				of = " " + m[1]
			}
			return fmt.Sprintf("the KV cache is too small for max_model_len%s: %s to at most %s%s", of, in.lowerContext(), m[2], in.moreKVMemory())
		},
	},
	{
		// vLLM V1 when it cannot estimate a length that fits (the estimate is 0, so the
		// sentence with it is left out): "To serve at least one request with the models's max
		// seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV
		// cache memory (0.12 GiB). Try increasing ..." (vllm/v1/core/kv_cache_utils.py,
		// check_enough_kv_cache_memory, 0.9 to 0.11). Lines with the estimate match the rule
		// above first.
		name: "kv-cache",
		keys: []string{"KV cache is needed"},
		re:   regexp.MustCompile(`(?:max seq len \((\d+)\), )?\(?([0-9.]+) GiB KV cache is needed, which is larger than the available KV cache memory \(([0-9.]+) GiB\)`),
		text: func(m []string, in hintInfo) string {
			of := ""
			if m[1] != "" {
				of = " " + m[1]
			}
			return fmt.Sprintf("the KV cache cannot hold one request of max_model_len%s (it needs %s GiB, %s GiB is available): %s%s, or use a smaller model", of, m[2], m[3], in.lowerContext(), in.moreKVMemory())
		},
	},
	{
		// vLLM V1 at start-up, before it loads anything, when other processes hold GPU memory:
		// "Free memory on device cuda:0 (7.34/15.49 GiB) on startup is less than desired GPU
		// memory utilization (0.8, 12.39 GiB). Decrease GPU memory utilization or reduce GPU
		// memory used by other processes." (vllm/v1/worker/gpu_worker.py, init_device, 0.10 to
		// 0.11; older releases leave out the device name).
		name: "gpu-memory",
		keys: []string{"is less than desired GPU memory utilization"},
		re:   regexp.MustCompile(`Free memory on device(?: \S+)? \(([0-9.]+)/([0-9.]+) GiB\) on startup is less than desired GPU memory utilization \(([0-9.]+), ([0-9.]+) GiB\)`),
		text: func(m []string, in hintInfo) string {
			free, _ := strconv.ParseFloat(m[1], 64)
			total, _ := strconv.ParseFloat(m[2], 64)
			most := ""
			if total > 0 && free > 0 {
				// Two decimals, rounded down: the fraction of the whole GPU that is free now.
				most = fmt.Sprintf(" to at most %.2f", math.Floor(free/total*100)/100)
			}
			where := in.argvOr("the server's arguments")
			return fmt.Sprintf("only %s of %s GiB of GPU memory is free at start-up, less than --gpu-memory-utilization %s asks for (%s GiB): stop the other processes that use the GPU (nvidia-smi lists them), or lower --gpu-memory-utilization%s in %s", m[1], m[2], m[3], m[4], most, where)
		},
	},
	{
		name: "kv-cache",
		keys: []string{"No available memory"},
		re:   regexp.MustCompile(`No available memory for the cache blocks`),
		text: func(_ []string, in hintInfo) string {
			return "no GPU memory is left for the KV cache: " + in.memoryChoices("raise --gpu-memory-utilization in %s")
		},
	},
	{
		name: "oom",
		keys: []string{"out of memory", "OutOfMemory"},
		re:   regexp.MustCompile(`CUDA out of memory|OutOfMemoryError|CUDA error: out of memory`),
		text: func(_ []string, in hintInfo) string {
			return "the GPU ran out of memory: " + in.memoryChoices("lower gpu memory use (--gpu-memory-utilization in %s)")
		},
	},
	{
		// Python's "[Errno 98] ... address already in use", Go's "bind: address already in
		// use", llama-server's "couldn't bind HTTP server socket".
		name: "port",
		keys: []string{"lready in use", "Errno 98", "couldn't bind"},
		re:   regexp.MustCompile(`(?i)address already in use|\[Errno 98\]|couldn't bind HTTP server socket`),
		text: func(_ []string, in hintInfo) string { return portHint(in.Host, in.Port) },
	},
	{
		// argparse: "vllm serve: error: unrecognized arguments: --foo 1".
		name: "args",
		keys: []string{"unrecognized arguments"},
		re:   regexp.MustCompile(`error: unrecognized arguments: (.+)`),
		text: func(m []string, in hintInfo) string {
			return fmt.Sprintf("%s does not know the argument(s) %s: fix %s (compare with the installed version's --help)", in.Engine, strings.TrimSpace(m[1]), in.argvOr("the server's arguments"))
		},
	},
	{
		// argparse: "error: argument --dtype: invalid choice: 'bf16' (choose from ...)".
		name: "args",
		keys: []string{"error: argument "},
		re:   regexp.MustCompile(`error: argument (\S+?): (.+)`),
		text: func(m []string, in hintInfo) string {
			return fmt.Sprintf("%s rejected %s: %s; fix %s", in.Engine, m[1], strings.TrimSpace(m[2]), in.settingOf(m[1]))
		},
	},
	{
		// llama.cpp's common argument parser: "error: invalid argument: --foo".
		name: "args",
		keys: []string{"invalid argument"},
		re:   regexp.MustCompile(`error: invalid argument: (\S+)`),
		text: func(m []string, in hintInfo) string {
			return fmt.Sprintf("%s does not know the argument %s: fix %s (compare with the installed version's --help)", in.Engine, m[1], in.argvOr("the server's arguments"))
		},
	},
	{
		// Go's flag package (runner sim, and Go servers under engine command): "flag provided
		// but not defined: -foo".
		name: "args",
		keys: []string{"flag provided but not defined"},
		re:   regexp.MustCompile(`^flag provided but not defined: (\S+)`),
		text: func(m []string, in hintInfo) string {
			return fmt.Sprintf("%s does not know the argument %s: fix %s (compare with its --help)", in.Engine, m[1], in.argvOr("the server's arguments"))
		},
	},
	{
		// Go's flag package: `invalid value "5" for flag -decode-per-token: parse error`.
		name: "args",
		keys: []string{"invalid value"},
		re:   regexp.MustCompile(`^invalid (?:boolean )?value (".*") for flag (\S+?): (.+)`),
		text: func(m []string, in hintInfo) string {
			// Go names flags with one dash; settingOf knows them with two.
			return fmt.Sprintf("%s rejected %s %s: %s; fix %s", in.Engine, m[2], m[1], strings.TrimSpace(m[3]), in.settingOf("-"+m[2]))
		},
	},
	{
		name: "model",
		keys: []string{"not a local folder", "Repository Not Found", "load model", "loading model"},
		re:   regexp.MustCompile(`is not a local folder and is not a valid model identifier|Repository Not Found|failed to load model|error loading model`),
		text: func(_ []string, in hintInfo) string {
			if !in.passes("server.model") {
				return "the server could not load the model: check the model in " + in.argvOr("the server's arguments") + " (a local path or a model id the server can fetch)"
			}
			return "the server could not load the model: check server.model (a local path or a model id the server can fetch)"
		},
	},
}

// hintScanner watches log lines and remembers the first match of each known failure.
type hintScanner struct {
	mu    sync.Mutex
	info  hintInfo
	found map[string]string // rule name -> hint text
}

func newHintScanner(info hintInfo) *hintScanner {
	return &hintScanner{info: info, found: map[string]string{}}
}

// scan checks one log line.
func (h *hintScanner) scan(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range hintRules {
		if _, done := h.found[r.name]; done {
			continue
		}
		if !containsAny(line, r.keys) {
			continue
		}
		if m := r.re.FindStringSubmatch(line); m != nil {
			h.found[r.name] = r.text(m, h.info)
		}
	}
}

// hint returns the hints found so far, most specific first, joined by "; "; empty when none.
func (h *hintScanner) hint() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, r := range hintRules {
		if t, ok := h.found[r.name]; ok && !seen[r.name] {
			seen[r.name] = true
			out = append(out, t)
		}
	}
	// Running out of memory is what a too-small KV cache amounts to; say it once.
	if seen["kv-cache"] && seen["oom"] {
		out = removeHint(out, h.found["oom"])
	}
	return strings.Join(out, "; ")
}

func removeHint(hs []string, h string) []string {
	out := hs[:0]
	for _, x := range hs {
		if x != h {
			out = append(out, x)
		}
	}
	return out
}

// HintFor returns the hint for a server log, given as lines, as Start would report it for
// engine listening on host:port; empty when no known failure appears.
func HintFor(engine, host string, port int, lines []string) string {
	h := newHintScanner(hintInfo{Engine: engine, Host: host, Port: port})
	for _, l := range lines {
		h.scan(l)
	}
	return h.hint()
}

// portHint says what to do about a port another process holds.
func portHint(host string, port int) string {
	return fmt.Sprintf("port %d on %s is taken by another process: stop that process, or set server.port: 0 to let the runner pick a free port", port, host)
}

// passes reports whether the engine's preset passes the setting to the server as one of the
// server's own flags (or, for ollama, its environment), and an experiment file can set it for
// that engine: a hint names a setting only then. For any other engine the flag can only have
// come from the server's argv as the experiment writes it (server.args, or server.command), and
// endpoint starts nothing.
func (in hintInfo) passes(setting string) bool {
	e, ok := enginefacts.Lookup(in.Engine)
	name, _ := strings.CutPrefix(setting, "server.")
	return ok && e.Boots && !e.Takes("command") && e.Takes(name) && e.Uses(name)
}

// argv names where the experiment writes the server's own arguments; "" for an engine that
// takes none from it (ollama is configured through its environment; endpoint starts nothing).
// An engine outside the table is taken to append server.args, as the presets of the table do.
func (in hintInfo) argv() string {
	if e, ok := enginefacts.Lookup(in.Engine); ok {
		return e.Argv()
	}
	return "server.args"
}

// argvOr is argv, or other for an engine without one.
func (in hintInfo) argvOr(other string) string {
	if a := in.argv(); a != "" {
		return a
	}
	return other
}

// lowerContext says how to ask for a shorter context for the engine.
func (in hintInfo) lowerContext() string {
	if in.passes("server.max_model_len") {
		return "lower server.max_model_len"
	}
	return "lower the context length (vLLM: --max-model-len) in " + in.argvOr("the server's arguments")
}

// moreKVMemory is the ", or give the KV cache more memory" clause, for engines whose arguments
// the experiment writes.
func (in hintInfo) moreKVMemory() string {
	if a := in.argv(); a != "" {
		return ", or give the KV cache more memory (--gpu-memory-utilization in " + a + ")"
	}
	return ""
}

// memoryChoices lists what to do about too little GPU memory; flag is the first choice, with
// a %s for where the server's arguments are written, left out for engines without them.
func (in hintInfo) memoryChoices(flag string) string {
	var out []string
	if a := in.argv(); a != "" {
		out = append(out, fmt.Sprintf(flag, a))
	}
	return strings.Join(append(out, in.lowerContext(), "or use a smaller model"), ", ")
}

// settingOf names the experiment setting that the engine's preset turns into a server flag, or
// where the server's arguments are written when the flag is none of those.
func (in hintInfo) settingOf(flag string) string {
	name, _, _ := strings.Cut(flag, "/") // argparse prints aliases as "--model/-m"
	var setting string
	switch name {
	case "--dtype":
		setting = "server.dtype"
	case "--max-model-len", "--context-length", "-c", "--ctx-size":
		setting = "server.max_model_len"
	case "--model", "--model-path", "-m", "model_tag":
		setting = "server.model"
	case "--port":
		setting = "server.port"
	case "--host":
		setting = "server.host"
	}
	if setting != "" && in.passes(setting) {
		return setting
	}
	return in.argv()
}

// authHint says what to do when the server answers 401 or 403 while the runner waits for it.
// Only engine endpoint sends a key (server.api_key_env); a server the runner boots must not
// require one.
func authHint(engine string, keySent bool) string {
	switch {
	case engine == "endpoint" && keySent:
		return "the server refused the runner's credentials: check the key in the variable server.api_key_env names"
	case engine == "endpoint":
		return "the server wants an API key: put it in an environment variable and name that variable in server.api_key_env"
	}
	// An engine whose preset builds the server's command line and appends server.args gets the
	// key the runner sends from --api-key there.
	if e, ok := enginefacts.Lookup(engine); ok && e.Boots && e.Argv() == "server.args" {
		if keySent {
			return fmt.Sprintf("%s refused the key given as --api-key in server.args: check it", engine)
		}
		other := ""
		if e.KeyEnv != "" {
			other = ", not only as " + e.KeyEnv
		}
		return fmt.Sprintf("the server requires an API key the runner did not send: the runner sends the key given as --api-key in server.args%s in server.env or the runner's environment; or start %s without one", other, engine)
	}
	where := "server.env and the runner's environment"
	if a := (hintInfo{Engine: engine}).argv(); a != "" {
		where = a + ", " + where
	}
	return fmt.Sprintf("the server requires an API key, which the runner cannot send to engine %s: start it without one (check %s)", engine, where)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
