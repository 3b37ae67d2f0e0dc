package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onelayerdown/runner/runner/internal/sim"
)

const simDescription = `
Serve a simulated vLLM OpenAI-compatible server with an explicit, configurable latency model.

It speaks vLLM's dialect: POST /v1/completions and /v1/chat/completions (streamed or not, with
stream_options include_usage and continuous_usage_stats, return_token_ids, ignore_eos,
min_tokens), GET /health, /v1/models, /version, /metrics (vllm:* histograms and counters),
POST /tokenize and /detokenize, and POST /reset_prefix_cache in dev mode (--dev-mode or
VLLM_SERVER_DEV_MODE=1). Text comes from a toy tokenizer (vocabulary words and single
characters) and is generated deterministically from --seed (or a request's "seed").

Latency model: alone, token k of a request is ready at
  queue-delay + prefill-per-token * (prompt tokens not in the prefix cache) + decode-per-token * k
after it arrives; each delay is scaled by its own factor in [1-jitter, 1+jitter] drawn from the
seed. A streamed event is sent when its last token is ready; --tokens-per-event sets how many
tokens each carries ("1", "4", or a cycle "1,3,1"), and --split-every N splits the last token of
every Nth text event so that one more event, halfway to the next token, carries the rest of its
text and no new token.

Continuous batching, as vLLM's V1 scheduler: with --max-num-seqs, --decode-per-seq or
--max-num-batched-tokens, one engine loop runs steps. At most --max-num-seqs requests run at once;
the others wait first in, first out, after their queue delay, and the wait counts in their TTFT.
A step advances every running request by one token and takes
  prefill-per-token * (prompt tokens it prefills) + decode-per-token + decode-per-seq * (decoding requests - 1)
so TPOT grows with the batch and a newly admitted prompt stalls everyone's next token. Prefill is
chunked: a step spends at most --max-num-batched-tokens tokens (a decode costs one; 0: no
budget, a prompt is prefilled whole in the step that admits it). A step's time is jittered once.
Alone on the engine, a request's timing is the formula above.

Ground truth: with --stamp, or the request header "X-Sim-Stamp: 1", every streamed chunk carries
  "sim": {"sent_ns": <Unix ns just before the write>, "event": i, "tokens": n, "completion_tokens": c}

Faults, for every request (--fault) or one (header "X-Sim-Fault: SPEC"); SPEC is a comma list of
  crash[@i] hang[@i] abort[@i] truncate[@i] error[@i] error-eof[@i] malformed[@i]
  status=CODE refuse=OPTION ignore=OPTION
and, for the whole server (--fault only), reset-noop hide-metric=NAME freeze-metric=NAME
no-route=PATH tokenize-prompt-only; where i is the index of the streamed data event the fault replaces (default 1). --boot-delay
keeps the port closed while "loading"; --boot-fail bf16|kv-cache|oom (or --gpu "Tesla T4"
with --dtype bfloat16) exits 1 after vLLM-like error lines.

Once the port is open it prints "listening on http://HOST:PORT" on stdout; logs go to stderr in
vLLM's style, ending the start-up with "Application startup complete.". The first interrupt
shuts down gracefully: in-flight requests get --shutdown-timeout to finish.`

// cmdSim runs the simulated server until ctx ends.
func cmdSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := sim.DefaultConfig()
	var f simFlags
	fs := newSimFlagSet(&cfg, &f, stderr)
	if helped, err := parseSimArgs(fs, args, &cfg.Model); helped || err != nil {
		return err
	}
	if err := f.apply(&cfg); err != nil {
		return err
	}
	cfg.Log = &syncWriter{w: stderr}
	cfg.PID = os.Getpid()
	// The crash fault ends the process the way a dying engine does: at once, mid-stream, with
	// no graceful shutdown.
	cfg.Crash = func() { os.Exit(1) }
	if err := cfg.Validate(); err != nil {
		return usageError("%w", err)
	}
	return serveSim(ctx, cfg, f, stdout)
}

// simFlags are the flags of runner sim that sim.Config does not take as they are given: where
// to listen, how to shut down, and the values that are parsed, combined or defaulted from the
// environment before they go into the configuration (see apply).
type simFlags struct {
	host            string
	port            int
	shutdownTimeout time.Duration
	perEvent        string
	faults          string
	noPrefixCaching bool
}

// newSimFlagSet returns the flag set of runner sim, which sets the fields of cfg that a flag
// gives as it is and the rest in f. The defaults are cfg's own, vLLM's where vLLM has the flag.
func newSimFlagSet(cfg *sim.Config, f *simFlags, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("sim", "runner sim [flags] [MODEL]", simDescription, stderr)
	def := *cfg
	fs.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fs.IntVar(&f.port, "port", 8000, "port to listen on; 0 picks a free one")
	fs.StringVar(&cfg.Model, "model", def.Model, "model name or path (also the first argument)")
	fs.StringVar(&cfg.ServedModelName, "served-model-name", "", "name requests use and /v1/models lists (default: the model)")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", def.MaxModelLen, "context length: prompt plus max_tokens")
	fs.Uint64Var(&cfg.Seed, "seed", def.Seed, "seed for ids, generated text and jitter")
	fs.StringVar(&cfg.Dtype, "dtype", "auto", "weight dtype, as vLLM's --dtype; only checked against --gpu")
	fs.StringVar(&cfg.GPU, "gpu", "", `simulated GPU name, e.g. "Tesla T4" (bfloat16 then fails to boot)`)
	fs.StringVar(&cfg.Version, "sim-version", def.Version, "version GET /version reports")
	fs.DurationVar(&cfg.QueueDelay, "queue-delay", 0, "delay between a request's admission and its prefill")
	fs.DurationVar(&cfg.PrefillPerToken, "prefill-per-token", 0, "prefill time per prompt token not in the prefix cache")
	fs.DurationVar(&cfg.DecodePerToken, "decode-per-token", 0, "time per generated token after the first")
	fs.StringVar(&f.perEvent, "tokens-per-event", "1", `tokens per streamed event: "N" or a cycle like "1,3,1"`)
	fs.IntVar(&cfg.SplitEvery, "split-every", 0, "split the last token's text of every Nth text event across two events (0: never)")
	fs.Float64Var(&cfg.Jitter, "jitter", 0, "scale each delay by a seeded factor in [1-jitter, 1+jitter]")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", 0, "requests running at once in the batching engine; more wait in a queue (0: no bound)")
	fs.DurationVar(&cfg.DecodePerSeq, "decode-per-seq", 0, "time each decoding request beyond the first adds to a batching engine step")
	fs.IntVar(&cfg.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "token budget of a batching engine step; longer prompts are prefilled in chunks (0: no budget)")
	fs.BoolVar(&cfg.PrefixCaching, "enable-prefix-caching", true, "cache prompt blocks so a repeated prefix skips prefill")
	fs.BoolVar(&f.noPrefixCaching, "no-enable-prefix-caching", false, "turn the prefix cache off")
	fs.IntVar(&cfg.BlockSize, "block-size", def.BlockSize, "prompt tokens per prefix-cache block")
	fs.IntVar(&cfg.CacheBlocks, "cache-blocks", def.CacheBlocks, "prefix-cache capacity in blocks (least recently used go first)")
	fs.BoolVar(&cfg.PromptTokensDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens")
	fs.Float64Var(&cfg.EOSProbability, "eos-probability", 0, "chance per token (after min_tokens, unless ignore_eos) of ending with EOS")
	fs.StringVar(&cfg.APIKey, "api-key", "", "require this bearer token on /v1 requests (also VLLM_API_KEY)")
	fs.BoolVar(&cfg.DevMode, "dev-mode", false, "register POST /reset_prefix_cache (also VLLM_SERVER_DEV_MODE=1)")
	fs.BoolVar(&cfg.Stamp, "stamp", false, `add the ground-truth "sim" field to every streamed chunk`)
	fs.StringVar(&f.faults, "fault", "", "faults injected into every request (see above)")
	fs.StringVar(&cfg.ErrorFormat, "error-format", def.ErrorFormat, `error body shape: "nested" (vLLM 0.10.1 and later) or "flat" (vLLM before 0.10.1)`)
	fs.DurationVar(&cfg.BootDelay, "boot-delay", 0, "time before the port opens, like vLLM loading weights")
	fs.StringVar(&cfg.BootFailure, "boot-fail", "", "fail to boot: bf16, kv-cache or oom")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 5*time.Second, "time in-flight requests get to finish on shutdown")
	return fs
}

// parseSimArgs parses the flags of runner sim and its one optional MODEL argument, which sets
// *model. vLLM takes the model first (vllm serve MODEL --flags); so does this command, and it
// also takes it after the flags.
func parseSimArgs(fs *flag.FlagSet, args []string, model *string) (helped bool, err error) {
	var positional string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		positional, args = args[0], args[1:]
	}
	if helped, err := parseFlags(fs, args); helped || err != nil {
		return helped, err
	}
	if positional != "" {
		if fs.NArg() > 0 {
			return false, usageError("want one MODEL argument, got %q and %q", positional, fs.Arg(0))
		}
		*model = positional
	}
	switch fs.NArg() {
	case 0:
	case 1:
		*model = fs.Arg(0)
	default:
		return false, usageError("want at most one MODEL argument, got %d", fs.NArg())
	}
	return false, nil
}

// apply puts into cfg what the flags of f say of the simulated server: the parsed event
// pattern and faults, the prefix cache unless turned off, and the API key and dev mode that
// vLLM also takes from its environment. A bad value is a usage error.
func (f *simFlags) apply(cfg *sim.Config) error {
	pattern, err := sim.ParsePattern(f.perEvent)
	if err != nil {
		return usageError("--tokens-per-event: %w", err)
	}
	faults, err := sim.ParseFaults(f.faults)
	if err != nil {
		return usageError("%w", err)
	}
	if f.port < 0 || f.port > 65535 {
		return usageError("--port %d is not a port number", f.port)
	}
	cfg.TokensPerEvent = pattern
	cfg.Faults = faults
	cfg.PrefixCaching = cfg.PrefixCaching && !f.noPrefixCaching
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("VLLM_API_KEY")
	}
	cfg.DevMode = cfg.DevMode || os.Getenv("VLLM_SERVER_DEV_MODE") == "1"
	return nil
}

// serveSim boots the simulated server of cfg, serves it on the address of f until ctx ends,
// then shuts it down, giving in-flight requests f.shutdownTimeout to finish. A boot failure
// the configuration asked for exits with status 1.
func serveSim(ctx context.Context, cfg sim.Config, f simFlags, stdout io.Writer) error {
	if err := sim.Boot(ctx, cfg); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		var be *sim.BootError
		if errors.As(err, &be) {
			return &exitError{code: 1, err: err}
		}
		return err
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "listening on %s\n", url)
	sim.LogReady(cfg, url)

	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		srv.Close()
		return fmt.Errorf("serve %s: %w", url, err)
	case <-ctx.Done():
	}
	sim.LogShutdown(cfg)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// In-flight requests (a hang fault, a long stream) did not finish in time: cut them.
		srv.Close()
		hs.Close()
	}
	srv.Close()
	return nil
}

// syncWriter serialises writes from the server's goroutines to one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
