package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// TestSimBootFailuresGetHints boots the simulator with each failure it can simulate and checks
// that the engine recognises its log, as it recognises vLLM's: the simulator is how the hints
// are exercised end to end without a GPU.
func TestSimBootFailuresGetHints(t *testing.T) {
	cases := []struct {
		name string
		set  func(*sim.Config)
		want string // a substring of the hint
	}{
		{"bf16", func(c *sim.Config) { c.BootFailure = "bf16" }, "set server.dtype: half"},
		{"bf16 on a T4", func(c *sim.Config) { c.GPU, c.Dtype = "Tesla T4", "bfloat16" }, "Tesla T4, compute capability 7.5"},
		{"kv-cache", func(c *sim.Config) { c.BootFailure = "kv-cache"; c.MaxModelLen = 2048 }, "lower server.max_model_len to at most 1024"},
		{"oom", func(c *sim.Config) { c.BootFailure = "oom" }, "ran out of memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			c := sim.DefaultConfig()
			c.Log = &log
			tc.set(&c)
			if err := sim.Boot(context.Background(), c); err == nil {
				t.Fatal("Boot succeeded")
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if hint := engine.HintFor("sim", "127.0.0.1", 8000, lines); !strings.Contains(hint, tc.want) {
				t.Errorf("hint %q, want one with %q; the log:\n%s", hint, tc.want, log.String())
			}
		})
	}
}

// TestSimBadArgumentGetsHint gives the simulator arguments it does not know or cannot parse, as
// a typo in server.args does, and checks that its complaint yields a hint about server.args.
func TestSimBadArgumentGetsHint(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus-flag"}, "does not know the argument -bogus-flag: fix server.args"},
		{[]string{"--decode-per-token", "5"}, "rejected -decode-per-token"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		err := dispatch(context.Background(), append([]string{"sim", "--port", "0"}, tc.args...), &stdout, &stderr)
		if err == nil {
			t.Fatalf("runner sim %q started", tc.args)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if hint := engine.HintFor("sim", "127.0.0.1", 8000, lines); !strings.Contains(hint, tc.want) {
			t.Errorf("runner sim %q: hint %q, want one with %q; stderr:\n%s", tc.args, hint, tc.want, stderr.String())
		}
	}
}
