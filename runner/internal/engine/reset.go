package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
)

// idleWait bounds how long a reset waits for the server to finish the requests it still runs.
// A variable so that tests can shorten it.
var idleWait = 2 * time.Minute

// idlePoll is how often the wait asks again.
var idlePoll = 200 * time.Millisecond

// resetWhenIdle returns a Reset that waits until the server runs and queues no request, as its
// /metrics gauges of running and waiting requests say (openai.ServerNames Running and Waiting),
// and then POSTs path. vLLM's /reset_prefix_cache answers 200 even when the engine declines to reset because
// requests are still running (vllm/v1/core/sched/scheduler.py, reset_prefix_cache, logs
// "Failed to reset prefix cache because some blocks (N) are not freed yet" and returns False,
// and the API server does not pass that on, 0.8 to 0.11); a request the runner gave up on (a
// client-side timeout) may still be generating. A server without those gauges is not waited for.
func resetWhenIdle(path string) func(ctx context.Context, h *Hook) error {
	return func(ctx context.Context, h *Hook) error {
		if err := waitIdle(ctx, h); err != nil {
			return err
		}
		_, err := h.Post(ctx, path, nil)
		return err
	}
}

// waitIdle polls /metrics until no request runs or waits, up to idleWait.
func waitIdle(ctx context.Context, h *Hook) error {
	deadline := time.Now().Add(idleWait)
	for {
		busy, known := inFlight(ctx, h)
		if !known || busy == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return &BusyError{Requests: busy, Waited: idleWait}
		}
		if err := sleepCtx(ctx, idlePoll); err != nil {
			return err
		}
	}
}

// BusyError is the error of a cache reset that was not sent because the server still ran or
// queued requests when the wait for it to become idle ran out: a reset then would be declined.
// It tells a server that offers the reset but is busy (an endpoint shared with other traffic)
// from one that offers none.
type BusyError struct {
	Requests float64       // the requests the server ran and queued at the last look
	Waited   time.Duration // how long the reset waited for them to end
}

// Error says what was waited for and for how long.
func (e *BusyError) Error() string {
	noun := "requests"
	if e.Requests == 1 {
		noun = "request"
	}
	return fmt.Sprintf("the server still ran or queued %g %s after %s", e.Requests, noun, e.Waited)
}

// inFlight returns the requests the server runs and queues, summed over its engines; known is
// false when /metrics does not tell.
func inFlight(ctx context.Context, h *Hook) (busy float64, known bool) {
	m, err := h.api.Metrics(ctx)
	if err != nil {
		return 0, false
	}
	return openai.InFlight(m)
}

// sglangFlushWait bounds how long an SGLang flush is retried while the server answers 400.
var sglangFlushWait = time.Minute

// sglangReset POSTs /flush_cache, which SGLang answers 400 while requests run or wait
// (python/sglang/srt/entrypoints/http_server.py, flush_cache, "When there are running or waiting
// requests, the operation will not be performed"). Releases before its readiness gate (v0.4.x)
// answer /health with 200 before their warm-up request is done, so the probe right after boot
// can meet the warm-up: a 400 is retried for up to sglangFlushWait, and only then is the reset
// taken to be impossible.
func sglangReset(ctx context.Context, h *Hook) error {
	deadline := time.Now().Add(sglangFlushWait)
	for {
		_, err := h.Post(ctx, "/flush_cache", nil)
		var he *openai.HTTPError
		if err == nil || !errors.As(err, &he) || he.Status != http.StatusBadRequest || !time.Now().Before(deadline) {
			return err
		}
		if err := sleepCtx(ctx, idlePoll); err != nil {
			return err
		}
	}
}

// CanResetCache reports whether the server offers a prefix cache reset (it answered the reset
// request Start sent once the server was ready).
func (s *Server) CanResetCache() bool { return s.canReset }

// CacheResetProblem returns why the reset Start sent once the server was ready failed (a
// *BusyError when the server never became idle), or nil when it succeeded or the engine has no
// reset to try.
func (s *Server) CacheResetProblem() error { return s.resetErr }

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

// sleepCtx waits d, or less when ctx ends first; then it returns ctx's error. The reset waits
// use it between their polls, so that a cancelled run does not wait out a poll.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
