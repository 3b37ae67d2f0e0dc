package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Config is the whole behaviour of a simulated server: what it serves, its latency model, its
// prefix cache and the faults it injects. The zero value is not useful; start from
// DefaultConfig.
type Config struct {
	// Model is the model path or name the server loads; /v1/models reports it as root.
	Model string
	// ServedModelName is the name requests must use and /v1/models lists as id; Model when empty.
	ServedModelName string
	// MaxModelLen is the context length: prompt tokens plus max_tokens may not exceed it.
	MaxModelLen int
	// Version is what GET /version reports.
	Version string
	// Seed seeds request ids, generated text and jitter. A request's own "seed" field, when
	// present, seeds its text instead.
	Seed uint64

	// QueueDelay is the time between a request's admission and the start of its prefill.
	QueueDelay time.Duration
	// PrefillPerToken is the prefill time of one prompt token that is not in the prefix cache.
	PrefillPerToken time.Duration
	// DecodePerToken is the time to generate one output token after the first.
	DecodePerToken time.Duration
	// TokensPerEvent is how many new tokens each streamed event carries, cycled: {1} sends one
	// token per event, {1, 3, 1} sends 1, 3, 1, 1, 3, 1, ... An event is sent when its last token
	// is generated. Entries must be positive.
	TokensPerEvent []int
	// SplitEvery, when positive, splits the text of the last token of every SplitEvery-th text
	// event in two: the event carries the token and the first part of its text, and one more
	// event, halfway to the next token, carries the rest of the text and no new token.
	SplitEvery int
	// Jitter scales every delay by a factor drawn uniformly from [1-Jitter, 1+Jitter], from the
	// seed. It must be in [0, 1).
	Jitter float64
	// MaxNumSeqs bounds the requests running (prefilling or decoding) at once in the batching
	// engine, as vLLM's --max-num-seqs does; later ones wait in a first-in, first-out queue, and
	// their wait counts in their time to first token. 0 means no bound. A positive value turns
	// the batching engine on (see DecodePerSeq).
	MaxNumSeqs int
	// MaxConcurrency bounds the requests served at once without the batching engine: each keeps
	// the single-stream timing, later ones wait for a slot and their wait counts in their time to
	// first token. 0 means no bound. It cannot be combined with the batching engine.
	//
	// Deprecated: set MaxNumSeqs, which also batches, as vLLM does.
	MaxConcurrency int
	// DecodePerSeq is what each running request beyond the first adds to a decode step of the
	// batching engine: a step that advances d decoding requests by one token takes
	// DecodePerToken + DecodePerSeq × (d − 1), plus PrefillPerToken for each prompt token it
	// prefills. A positive value turns on the batching engine.
	DecodePerSeq time.Duration
	// MaxNumBatchedTokens is the token budget of one step of the batching engine, as vLLM's
	// --max-num-batched-tokens: a decode costs one token, a prompt longer than what is left is
	// prefilled in chunks over several steps (chunked prefill). 0 means no budget: a prompt is
	// prefilled whole in the step that admits it. A positive value turns on the batching engine.
	MaxNumBatchedTokens int

	// PrefixCaching turns on the prefix cache (vLLM's default).
	PrefixCaching bool
	// BlockSize is the number of prompt tokens per cache block (vLLM's default is 16).
	BlockSize int
	// CacheBlocks bounds the number of cached blocks; the least recently used go first.
	CacheBlocks int
	// PromptTokensDetails adds usage.prompt_tokens_details.cached_tokens to final usage, as vLLM
	// does with --enable-prompt-tokens-details.
	PromptTokensDetails bool

	// EOSProbability is the chance that each generated token, once min_tokens are out, is the
	// end-of-sequence token, which ends the output with finish_reason "stop". Requests with
	// ignore_eos never end early. 0 (the default) makes every request run to max_tokens.
	EOSProbability float64

	// APIKey, when set, must come as "Authorization: Bearer KEY" on every /v1 request, as with
	// vLLM's --api-key; other requests get 401 {"error":"Unauthorized"}.
	APIKey string

	// DevMode registers POST /reset_prefix_cache, as VLLM_SERVER_DEV_MODE=1 does for vLLM.
	DevMode bool
	// Stamp adds the ground-truth "sim" field to every streamed chunk, as the X-Sim-Stamp: 1
	// request header does for one request.
	Stamp bool
	// Faults are injected into every request, before those of its X-Sim-Fault header.
	Faults []Fault
	// ErrorFormat is the error body shape: "nested" ({"error":{"message":...}}, vLLM 0.10.1 and
	// later, whose ErrorResponse in vllm/entrypoints/openai/protocol.py wraps an ErrorInfo), the
	// default, or "flat" ({"object":"error","message":...}, vLLM up to 0.10.0).
	ErrorFormat string

	// BootDelay is how long Boot takes before the server may listen, like vLLM loading weights.
	BootDelay time.Duration
	// BootFailure makes Boot fail with a vLLM-like error: "bf16", "kv-cache" or "oom".
	BootFailure string
	// GPU is the simulated GPU's name, e.g. "Tesla T4"; with Dtype bfloat16 on a GPU of compute
	// capability below 8.0, Boot fails as vLLM does. Empty means no check.
	GPU string
	// Dtype is the weight dtype asked for, as in vLLM's --dtype; it only matters with GPU.
	Dtype string

	// Log receives vLLM-style log lines: boot, access log, warnings. Nil discards them.
	Log io.Writer
	// PID is the process id shown in log prefixes.
	PID int
	// Now is the wall clock for "created" fields, stamps and log times; time.Now when nil.
	// Delays always use the real monotonic clock.
	Now func() time.Time
	// Crash is called to end the process abruptly for the crash fault. When nil, a crash is
	// simulated in process: the connection is cut and the server stays dead (GET /health answers
	// 503, requests fail with 500), as when vLLM's engine core dies.
	Crash func()
}

// DefaultConfig returns the configuration `runner sim` starts from: a small model that answers
// at once, with prefix caching on.
func DefaultConfig() Config {
	return Config{
		Model:          "sim/toy-1",
		MaxModelLen:    2048,
		Version:        "0.0.0+sim",
		Seed:           0,
		TokensPerEvent: []int{1},
		PrefixCaching:  true,
		BlockSize:      16,
		CacheBlocks:    4096,
		ErrorFormat:    "nested",
	}
}

// Validate reports the first setting of c that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("model is empty")
	case c.MaxModelLen < 2:
		return fmt.Errorf("max model len %d is below 2", c.MaxModelLen)
	case c.QueueDelay < 0 || c.PrefillPerToken < 0 || c.DecodePerToken < 0 || c.BootDelay < 0:
		return fmt.Errorf("delays must not be negative")
	case len(c.TokensPerEvent) == 0:
		return fmt.Errorf("tokens per event is empty")
	case c.Jitter < 0 || c.Jitter >= 1:
		return fmt.Errorf("jitter %v is outside [0, 1)", c.Jitter)
	case c.MaxConcurrency < 0:
		return fmt.Errorf("max concurrency %d is negative", c.MaxConcurrency)
	case c.MaxNumSeqs < 0:
		return fmt.Errorf("max num seqs %d is negative", c.MaxNumSeqs)
	case c.MaxConcurrency > 0 && c.batching():
		return fmt.Errorf("max concurrency %d bounds the single-stream model; with batching set max num seqs instead", c.MaxConcurrency)
	case c.DecodePerSeq < 0:
		return fmt.Errorf("decode per seq %v is negative", c.DecodePerSeq)
	case c.MaxNumBatchedTokens < 0:
		return fmt.Errorf("max num batched tokens %d is negative", c.MaxNumBatchedTokens)
	case c.MaxNumBatchedTokens > 0 && c.MaxNumBatchedTokens < c.MaxNumSeqs:
		// vLLM refuses this too: a step could not decode every running request.
		return fmt.Errorf("max num batched tokens %d is below max num seqs %d", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	case c.SplitEvery < 0:
		return fmt.Errorf("split every %d is negative", c.SplitEvery)
	case c.PrefixCaching && (c.BlockSize < 1 || c.CacheBlocks < 1):
		return fmt.Errorf("prefix cache needs a positive block size and block count")
	case c.EOSProbability < 0 || c.EOSProbability > 1:
		return fmt.Errorf("eos probability %v is outside [0, 1]", c.EOSProbability)
	case c.ErrorFormat != "flat" && c.ErrorFormat != "nested":
		return fmt.Errorf("error format %q is neither flat nor nested", c.ErrorFormat)
	}
	for _, n := range c.TokensPerEvent {
		if n < 1 {
			return fmt.Errorf("tokens per event %v has an entry below 1", c.TokensPerEvent)
		}
	}
	switch c.BootFailure {
	case "", "bf16", "kv-cache", "oom":
	default:
		return fmt.Errorf("boot failure %q is not one of bf16, kv-cache, oom", c.BootFailure)
	}
	for _, f := range c.Faults {
		if err := f.validate(); err != nil {
			return err
		}
	}
	return nil
}

// batching reports whether requests go through the batching engine's step loop rather than
// each being timed on its own by the single-stream model.
func (c Config) batching() bool {
	return c.MaxNumSeqs > 0 || c.DecodePerSeq > 0 || c.MaxNumBatchedTokens > 0
}

// servedName returns the name requests must use.
func (c Config) servedName() string {
	if c.ServedModelName != "" {
		return c.ServedModelName
	}
	return c.Model
}

// ParsePattern parses a tokens-per-event pattern: one positive integer ("4") or a
// comma-separated cycle of them ("1,3,1").
func ParsePattern(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			if part == s {
				return nil, fmt.Errorf("%q is not a positive integer", s)
			}
			return nil, fmt.Errorf("%q: %q is not a positive integer", s, part)
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatPattern is the inverse of ParsePattern.
func FormatPattern(p []int) string {
	parts := make([]string, len(p))
	for i, n := range p {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
