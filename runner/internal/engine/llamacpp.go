package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// llama-server has no call that empties its whole cache (tools/server/server.cpp and its
// README, builds b6000 to b7000):
//
//   - POST /slots/{id}?action=erase empties one slot, and answers 501 ("This server does not
//     support slots action. Start it with `--slot-save-path`") unless the server was started with
//     --slot-save-path;
//   - the server runs several slots by default (--parallel), and since about b6700 also keeps a
//     host-memory prompt cache (--cache-ram) that no slot action clears;
//   - reuse is decided per request: "cache_prompt" (default true) lets a request start from the
//     longest prefix a slot already holds.
//
// So the preset turns reuse off on every measured request with "cache_prompt": false, and
// proves once, after boot, that the server honours it: the same prompt sent twice must come
// back with timings.cache_n (the prompt tokens taken from the cache, in every answer since
// about b5000) 0 the second time. A build whose answers carry no timings is taken at its word.

// llamaResetFields are the request fields that keep llama-server from reusing its cache.
var llamaResetFields = map[string]any{"cache_prompt": false}

// llamaResetMechanism is how the records name the llama-server reset.
const llamaResetMechanism = `"cache_prompt": false on every request (llama-server has no whole-cache reset)`

// llamaCacheProbe is the prompt of the check: long enough to fill a cache block.
const llamaCacheProbe = "The runner checks that this server does not reuse its prompt cache when asked not to. " +
	"It sends this text twice and reads how many prompt tokens the second answer took from the cache."

// llamaReset returns the Reset of a llama-server launch: its first call runs the check above,
// later calls do nothing (each request carries llamaResetFields).
func llamaReset() func(ctx context.Context, h *Hook) error {
	var checked atomic.Bool
	return func(ctx context.Context, h *Hook) error {
		if checked.Load() {
			return nil
		}
		if err := checkNoCacheReuse(ctx, h); err != nil {
			return err
		}
		checked.Store(true)
		return nil
	}
}

// checkNoCacheReuse sends the probe twice with "cache_prompt": false to llama-server's native
// /completion and fails when the second answer took prompt tokens from the cache.
func checkNoCacheReuse(ctx context.Context, h *Hook) error {
	body := map[string]any{"prompt": llamaCacheProbe, "n_predict": 1, "cache_prompt": false}
	var cached *int
	for range 2 {
		b, err := h.Post(ctx, "/completion", body)
		if err != nil {
			return fmt.Errorf("check that the server honours \"cache_prompt\": false: %w", err)
		}
		var out struct {
			Timings *struct {
				CacheN *int `json:"cache_n"`
			} `json:"timings"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return fmt.Errorf("check that the server honours \"cache_prompt\": false: the /completion answer is no JSON object: %w", err)
		}
		cached = nil
		if out.Timings != nil {
			cached = out.Timings.CacheN
		}
	}
	if cached != nil && *cached > 0 {
		return fmt.Errorf("the server took %d prompt tokens from its cache although the request said \"cache_prompt\": false", *cached)
	}
	return nil
}
