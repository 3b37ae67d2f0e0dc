package sim

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func seqIDs(n, from int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = from + i
	}
	return ids
}

func TestPrefixCacheBlocks(t *testing.T) {
	c := newPrefixCache(4, 100)
	a := seqIDs(10, 0) // blocks [0..3] [4..7], 2 tokens left over
	if got := c.lookup(a); got != 0 {
		t.Fatalf("cold lookup hit %d tokens", got)
	}
	c.insert(a)
	if got := c.lookup(a); got != 8 {
		t.Errorf("repeat of a 10-token prompt hit %d tokens, want 8 (two full blocks)", got)
	}
	// A prompt of exactly two blocks keeps its last token uncached, so only one block hits.
	if got := c.lookup(a[:8]); got != 4 {
		t.Errorf("8-token prefix hit %d tokens, want 4 (the last token is always computed)", got)
	}
	// Same second block after a different first block: keys chain, so nothing hits.
	b := append(seqIDs(4, 100), a[4:]...)
	if got := c.lookup(b); got != 0 {
		t.Errorf("prompt with a different first block hit %d tokens, want 0", got)
	}
	// A shared first block hits even when the rest differs.
	d := append(seqIDs(4, 0), seqIDs(6, 500)...)
	if got := c.lookup(d); got != 4 {
		t.Errorf("prompt sharing the first block hit %d tokens, want 4", got)
	}
	q, h, blocks := c.stats()
	if q != 10+10+8+10+10 || h != 8+4+4 || blocks != 2 {
		t.Errorf("stats: queries %d hits %d blocks %d", q, h, blocks)
	}
	c.reset()
	if got := c.lookup(a); got != 0 {
		t.Errorf("after reset a prompt hit %d tokens", got)
	}
}

func TestPrefixCacheLRU(t *testing.T) {
	c := newPrefixCache(2, 3)
	a, b := seqIDs(5, 0), seqIDs(5, 100) // two blocks each
	c.insert(a)
	c.insert(b) // 4 blocks > 3: a's first block, the least recently used, goes
	if got := c.lookup(a); got != 0 {
		t.Errorf("a after eviction of its first block hit %d tokens, want 0", got)
	}
	if got := c.lookup(b); got != 4 {
		t.Errorf("b hit %d tokens, want 4", got)
	}
	if _, _, n := c.stats(); n != 3 {
		t.Errorf("%d blocks cached, capacity is 3", n)
	}
}

// TestPrefixCacheServer checks the cache through HTTP: a repeated prompt reports cached tokens
// and plans a shorter prefill; /reset_prefix_cache empties it; without dev mode it is 404.
func TestPrefixCacheServer(t *testing.T) {
	s, ts := startServer(t, func(c *Config) { c.DevMode = true; c.PromptTokensDetails = true })
	prompt := strings.Repeat(" the", 70) // 71 tokens with BOS: 4 full blocks of 16 before the last token
	body := `{"prompt":"` + prompt + `","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
	cached := func() int {
		t.Helper()
		_, b, err := post(t, ts, "/v1/completions", body, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, _ := chunks(t, b)
		u := cs[len(cs)-1].Usage
		if u == nil || u.PromptTokensDetails == nil {
			t.Fatalf("no prompt_tokens_details in the usage chunk: %s", b)
		}
		return u.PromptTokensDetails.CachedTokens
	}
	if got := cached(); got != 0 {
		t.Errorf("first request: %d cached tokens, want 0", got)
	}
	if got := cached(); got != 64 {
		t.Errorf("repeat: %d cached tokens, want 64", got)
	}
	ids := s.tok.encode(prompt, true)
	cold := mustServer(t, func(c *Config) { c.PrefillPerToken = ms })
	warm := cold.makePlan(planInput{promptTokens: len(ids), cachedTokens: 64, maxTokens: 1})
	full := cold.makePlan(planInput{promptTokens: len(ids), maxTokens: 1})
	if d := full.tokenAt[0] - warm.tokenAt[0]; d != 64*ms {
		t.Errorf("64 cached tokens saved %v of prefill, want 64ms", d)
	}

	resp, _, _ := post(t, ts, "/reset_prefix_cache", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: HTTP %d", resp.StatusCode)
	}
	if got := cached(); got != 0 {
		t.Errorf("after reset: %d cached tokens, want 0", got)
	}

	_, plain := startServer(t, nil)
	resp, b, _ := post(t, plain, "/reset_prefix_cache", "", nil)
	if resp.StatusCode != http.StatusNotFound || string(b) != `{"detail":"Not Found"}` {
		t.Errorf("reset without dev mode: HTTP %d %s, want 404 {\"detail\":\"Not Found\"}", resp.StatusCode, b)
	}

	_, off := startServer(t, func(c *Config) { c.PrefixCaching = false; c.PromptTokensDetails = true })
	for i := range 2 {
		_, b, _ := post(t, off, "/v1/completions", body, nil)
		cs, _ := chunks(t, b)
		if got := cs[len(cs)-1].Usage.PromptTokensDetails.CachedTokens; got != 0 {
			t.Errorf("caching off, request %d: %d cached tokens", i, got)
		}
	}
}

// TestPrefixCacheSpeedsUpRealTime checks on the real clock that a repeated long prompt's first
// event comes sooner than the first time, by about the cached tokens' prefill.
func TestPrefixCacheSpeedsUpRealTime(t *testing.T) {
	_, ts := startServer(t, func(c *Config) { c.Now = nil; c.PrefillPerToken = ms / 2 })
	prompt := strings.Repeat(" the", 399) // 400 tokens with BOS
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":1,"stream":true}`, prompt)
	sent, evs := streamTimed(t, ts.URL+"/v1/completions", body, nil)
	coldTTFT := evs[0].at.Sub(sent)
	sent, evs = streamTimed(t, ts.URL+"/v1/completions", body, nil)
	warmTTFT := evs[0].at.Sub(sent)
	if coldTTFT < 200*ms {
		t.Errorf("cold TTFT %v is below its 200ms of prefill", coldTTFT)
	}
	if warmTTFT >= coldTTFT {
		t.Errorf("warm TTFT %v is not below cold TTFT %v", warmTTFT, coldTTFT)
	}
}
