package experiment

import "time"

// Experiment is a loaded, validated experiment file (format version 1). Its Server, Request and
// Cache hold what the file says, without defaults, since a matrix axis may still change them;
// Repetitions, Warmup, Order and Timeouts have their defaults applied. Expand resolves everything
// into Configs.
type Experiment struct {
	Version     int
	Name        string // [a-z0-9._-]+; part of result paths
	Description string

	Server      Server
	Request     Request
	Matrix      Matrix
	Repetitions int
	Warmup      int
	Cache       string // "reset" | "reset_per_config" | "keep"; "" means the default (see Config.Cache)
	Order       Order
	Timeouts    Timeouts
	Load        *LoadSpec // nil without a load section; defaults not applied
	SLO         []Bound   // the service-level objective, in file order; empty without one

	Path   string // the file it was loaded from
	Source []byte // the file's bytes, as read

	pos map[string]pos // field path → where it was written; nil for an experiment built in code
}

// Server is how to reach or boot the inference server.
type Server struct {
	Engine       string            // vllm (default) | sim | endpoint | ...
	Model        string            //
	Dtype        string            // e.g. half, float16, bfloat16, float, auto
	MaxModelLen  int               // 0 when unset
	Args         []string          // extra argv, passed as is
	Env          map[string]string // values: "{host}", "{port}" and "{model}" are substituted
	ReadyTimeout time.Duration     //
	Host         string            // bind host; 127.0.0.1 by default
	Port         int               // 0: pick a free port
	URL          string            // endpoint only: base URL, e.g. http://127.0.0.1:8000
	APIKeyEnv    string            // endpoint only: NAME of the env var holding the API key
	Entrypoint   string            // vllm only: "serve" (default) | "api_server" (python -m ...)
	Command      []string          // command only: argv; "{port}" and "{host}" are substituted
	ReadyPath    string            // command only: path polled for readiness, e.g. /health
}

// Request is the request sent for each repetition of a config.
type Request struct {
	API string // "completions" | "chat"

	// Exactly one prompt source is set in a Config: Prompt (literal text, PromptName set when it
	// came from the named list) or PromptTokens (synthesise exactly N tokens).
	Prompt       string
	PromptName   string
	PromptTokens int
	Prompts      []NamedPrompt // the named list, before expansion; empty in a Config

	MaxTokens   int
	IgnoreEOS   *bool
	MinTokens   *int
	Temperature *float64
	Seed        *int
	Stop        []string
	Extra       map[string]any // merged into the request body
}

// NamedPrompt is one entry of request.prompts.
type NamedPrompt struct {
	Name string
	Text string
}

// Matrix is the set of axes to sweep, with CI-style include and exclude lists.
type Matrix struct {
	Axes    []Axis
	Include []map[string]any
	Exclude []map[string]any
}

// Axis is one swept field, named by its dotted path (request.max_tokens).
type Axis struct {
	Path   string
	Values []any
}

// Order is the order in which the repetitions of all configs of one server are sent.
type Order struct {
	Mode string // "sequential" | "interleaved" | "shuffled"
	Seed int64  // for shuffled
}

// Timeouts bound each request.
type Timeouts struct {
	Request time.Duration // whole request, first byte to end of stream
}

// Config is one point of the expanded matrix: everything needed to send its requests, with
// every default applied (see the Default constants) and exactly one prompt resolved.
type Config struct {
	ID       string      // stable: the same content gives the same id on any machine
	ServerID string      // stable id of the Server part; configs sharing it share one boot
	Label    string      // readable, e.g. "max_tokens=64,prompt_tokens=512"; "default" without axes
	Index    int         // position in the expansion order
	Axes     []AxisValue // the axis values of this point, in axis order

	Server      Server
	Request     Request
	Repetitions int
	Warmup      int
	// Cache is how the prefix cache is treated: reset before every request, reset_per_config
	// once before the config's requests (its load point), or keep. The default is reset where the
	// engine can empty its cache and keep elsewhere; for a load point with more than one request
	// in flight, reset_per_config where the engine can.
	Cache    string
	Timeouts Timeouts
	// Load is how the config's requests are sent, every default applied; nil for a config of an
	// experiment without a load section, whose requests go one at a time in the experiment's
	// order, exactly as before loads existed. A config with a Load is one load point: its
	// requests run as one block, warm-ups first, under its load.
	Load *LoadSpec `json:",omitempty"`
	// SLO is the experiment's service-level objective; it plays no part in the config's id.
	SLO []Bound `json:",omitempty"`
}

// LoadSpec is how the requests of one load point arrive: a closed loop keeps Concurrency requests
// in flight; an open loop sends Rate requests per second from a seeded arrival process.
type LoadSpec struct {
	Concurrency    int     // closed loop: requests in flight; 0 for an open loop
	Rate           float64 // open loop: requests per second; 0 for a closed loop
	Arrival        string  // open loop: constant | poisson (default) | gamma
	Burstiness     float64 // gamma's shape, as vLLM's --burstiness: 1 is Poisson; default 1
	MaxConcurrency int     // open loop: requests in flight at most; 0 means no cap
	Seed           int64   // seeds the arrival process and the distinct prompt prefixes
	// Prompts is distinct (the default: every request's synthesised prompt starts with its own
	// seeded prefix, so that no request hits the prefix cache on another's prompt) or shared
	// (every request sends the same prompt).
	Prompts string
}

// Open reports whether the load is an open loop.
func (l *LoadSpec) Open() bool { return l != nil && l.Rate > 0 }

// InFlight returns the most requests the load can have in flight at once; 0 means no bound.
func (l *LoadSpec) InFlight() int {
	switch {
	case l == nil:
		return 1
	case l.Open():
		return l.MaxConcurrency
	default:
		return l.Concurrency
	}
}

// Bound is one bound of a service-level objective: a request meets it when its metric is at
// most Max. A request is good when it meets every bound (vLLM's definition of goodput).
type Bound struct {
	Metric string  // a summarised metric in milliseconds: ttft_ms, tpot_event_ms, tpot_token_ms, e2e_ms
	Max    float64 // milliseconds
}

// AxisValue is one axis's value at a config.
type AxisValue struct {
	Path  string // dotted path, e.g. request.max_tokens
	Value string // the value rendered as text
}
