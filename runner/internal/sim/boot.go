package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Log lines follow vLLM's layout so that log tailing can be tested against them:
//
//	(APIServer pid=123) INFO 05-06 21:00:52 [api_server.py:1] message
//	(APIServer pid=123) INFO:     127.0.0.1:41950 - "POST /v1/completions HTTP/1.1" 200 OK
//
// The [file:line] tag names the simulator's part that logs, not a real source line.

func logLine(w io.Writer, pid int, now time.Time, level, src, msg string) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "(APIServer pid=%d) %s %s [%s] %s\n", pid, level, now.Format("01-02 15:04:05"), src, msg)
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// logf writes one log line; safe for concurrent use.
func (s *Server) logf(level, src, format string, args ...any) {
	if s.cfg.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	logLine(s.cfg.Log, s.cfg.PID, s.now(), level, src+".py:1", fmt.Sprintf(format, args...))
}

// access writes uvicorn's access log line for one request.
func (s *Server) access(r *http.Request, status int) {
	if s.cfg.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.cfg.Log, "(APIServer pid=%d) INFO:     %s - \"%s %s %s\" %d %s\n",
		s.cfg.PID, r.RemoteAddr, r.Method, r.URL.RequestURI(), r.Proto, status, http.StatusText(status))
}

// BootError is a simulated start-up failure; its message is the last log line.
type BootError struct {
	Kind string // bf16, kv-cache or oom
	Msg  string
}

// Error returns the failure's message.
func (e *BootError) Error() string { return "engine start-up failed: " + e.Msg }

// computeCapability returns the compute capability of the GPUs the simulator knows by name, or 0.
func computeCapability(gpu string) float64 {
	g := strings.ToUpper(gpu)
	switch {
	case strings.Contains(g, "T4"), strings.Contains(g, "RTX 20"):
		return 7.5
	case strings.Contains(g, "V100"):
		return 7.0
	case strings.Contains(g, "P100"):
		return 6.0
	case strings.Contains(g, "A100"), strings.Contains(g, "A10"), strings.Contains(g, "L4"),
		strings.Contains(g, "H100"), strings.Contains(g, "H200"), strings.Contains(g, "L40"):
		return 8.0
	}
	return 0
}

// Boot plays the engine's start-up: it writes vLLM-like start-up lines to c.Log, waits
// c.BootDelay (the port stays closed meanwhile, as vLLM's does while it loads weights) and fails
// with a *BootError when c asks for a boot failure or for bfloat16 on a GPU without it. It
// returns ctx's error when ctx ends first.
func Boot(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	log := func(level, src, format string, args ...any) {
		logLine(c.Log, c.PID, c.now(), level, src, fmt.Sprintf(format, args...))
	}
	log("INFO", "api_server.py:1", "vLLM API server version %s", c.Version)
	log("INFO", "api_server.py:1", "args: model=%q served_model_name=%q max_model_len=%d dtype=%q seed=%d",
		c.Model, c.servedName(), c.MaxModelLen, c.Dtype, c.Seed)
	log("INFO", "sim.py:1", "simulated engine: queue %v, prefill %v/token, decode %v/token, tokens per event %s, jitter %g, max concurrency %d, prefix caching %v",
		c.QueueDelay, c.PrefillPerToken, c.DecodePerToken, FormatPattern(c.TokensPerEvent), c.Jitter, c.MaxConcurrency, c.PrefixCaching)

	fail := func(kind, msg string) error {
		log("ERROR", "core.py:1", "EngineCore failed to start.")
		logLine(c.Log, c.PID, c.now(), "ERROR", "core.py:1", msg)
		if c.Log != nil {
			fmt.Fprintf(c.Log, "RuntimeError: Engine core initialization failed. See root cause above.\n")
		}
		return &BootError{Kind: kind, Msg: msg}
	}
	cc := computeCapability(c.GPU)
	if c.BootFailure == "bf16" || (cc > 0 && cc < 8.0 && strings.EqualFold(c.Dtype, "bfloat16")) {
		gpu := c.GPU
		if gpu == "" {
			gpu, cc = "Tesla T4", 7.5
		}
		return fail("bf16", fmt.Sprintf("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0; "+
			"your %s GPU has compute capability %.1f. Use float16 instead by setting the `dtype` flag, e.g. --dtype=half.", gpu, cc))
	}
	log("INFO", "gpu_model_runner.py:1", "Starting to load model %s...", c.Model)
	if c.BootDelay > 0 {
		t := time.NewTimer(c.BootDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	switch c.BootFailure {
	case "oom":
		return fail("oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "+
			"GPU 0 has a total capacity of 14.58 GiB of which 1.06 GiB is free (simulated).")
	case "kv-cache":
		// vLLM V1's words (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory,
		// 0.9 to 0.11; the V0 sentence "max seq len (N) is larger than the maximum number of
		// tokens that can be stored in KV cache (M)" went with the V0 engine). The simulated
		// model needs 128 KiB of KV cache per token and has room for half of max_model_len.
		needed := float64(c.MaxModelLen) * 128 / (1 << 20)
		return fail("kv-cache", fmt.Sprintf("ValueError: To serve at least one request with the models's max seq len (%d), "+
			"(%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f GiB). "+
			"Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` "+
			"or decreasing `max_model_len` when initializing the engine.", c.MaxModelLen, needed, needed/2, c.MaxModelLen/2))
	}
	log("INFO", "gpu_model_runner.py:1", "Model loading took 0.01 GiB and %.6f seconds", c.BootDelay.Seconds())
	return nil
}

// routes lists the routes LogReady announces.
func (c Config) routes() [][2]string {
	r := [][2]string{
		{"/health", "GET"}, {"/ping", "GET"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
		{"/v1/models", "GET"}, {"/version", "GET"}, {"/metrics", "GET"},
		{"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"},
	}
	if c.DevMode {
		r = append(r, [2]string{"/reset_prefix_cache", "POST"})
	}
	return r
}

// LogReady writes the lines vLLM prints once its port is open, ending with uvicorn's
// "Application startup complete.", which tells a log tailer that the server is ready. url is the
// address served, e.g. http://127.0.0.1:8000.
func LogReady(c Config, url string) {
	if c.Log == nil {
		return
	}
	log := func(src, format string, args ...any) {
		logLine(c.Log, c.PID, c.now(), "INFO", src, fmt.Sprintf(format, args...))
	}
	if c.DevMode {
		logLine(c.Log, c.PID, c.now(), "WARNING", "api_server.py:1",
			"SECURITY WARNING: development endpoints are enabled! This should not be used in production!")
	}
	log("api_server.py:1", "Starting vLLM API server 0 on %s", url)
	log("launcher.py:1", "Available routes are:")
	for _, r := range c.routes() {
		log("launcher.py:1", "Route: %s, Methods: %s", r[0], r[1])
	}
	for _, l := range []string{
		fmt.Sprintf("Started server process [%d]", c.PID),
		"Waiting for application startup.",
		"Application startup complete.",
	} {
		fmt.Fprintf(c.Log, "(APIServer pid=%d) INFO:     %s\n", c.PID, l)
	}
}

// LogShutdown writes the lines uvicorn prints when it shuts down.
func LogShutdown(c Config) {
	if c.Log == nil {
		return
	}
	for _, l := range []string{"Shutting down", "Waiting for application shutdown.", "Application shutdown complete.",
		fmt.Sprintf("Finished server process [%d]", c.PID)} {
		fmt.Fprintf(c.Log, "(APIServer pid=%d) INFO:     %s\n", c.PID, l)
	}
}
