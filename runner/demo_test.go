package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/engine/enginetest"
	"github.com/onelayerdown/runner/runner/internal/gguf"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestCPUEngineDemo runs the committed experiments/cpu-demo.yaml end to end on the real CPU engine:
// the built runner boots ollama on a model it generated, sends every request, and writes a
// result folder, which is then checked: every row present and ok, TTFT and TPOT positive and
// plausible, output tokens equal to max_tokens (the model never stops early), every prompt
// billed by the server exactly the prompt_tokens asked for, and no server process left behind.
//
// It runs under make test-engine, which builds the engine (see enginetest).
func TestCPUEngineDemo(t *testing.T) {
	t.Parallel()
	enginetest.Require(t, engine.FindOllama)
	bin := buildRunner(t)
	e, configs, exp := committedExperiment(t, "cpu-demo")
	// The experiment names its model relative to the working directory: run in a fresh one
	// that holds a freshly generated model at that path.
	work := t.TempDir()
	model := filepath.Join(work, e.Server.Model)
	if err := os.MkdirAll(filepath.Dir(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := gguf.WriteTinyLlamaFile(model, gguf.DefaultParams()); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(work, "results")
	start := time.Now()
	// Every process of the engine (ollama serve, its model runners) inherits this variable,
	// which is how the check below finds any that outlived the run.
	marker := "RUNNER_TEST_RUN=cpu-demo-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	code, stdout, stderr := runIn(t, work, bin, []string{exp, "--results", root}, marker)
	t.Logf("ran in %s", time.Since(start).Round(time.Second))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)

	folder, reqs, byConfig := readRun(t, root, e.Name, configs)
	for _, r := range reqs {
		c := byConfig[r.ConfigID]
		id := results.RequestID(r.ConfigID, r.Seq)
		if r.Status != record.StatusOK {
			t.Errorf("%s (%s): %s %s", id, c.Label, r.ErrorClass, r.Error)
			continue
		}
		// What the definitions require, whatever the machine's speed (a busy machine makes
		// every figure larger, and nothing here bounds them from above): TTFT and both TPOTs
		// positive, TPOT at least 10 µs (a smaller figure would mean the events were not timed
		// as they came: ollama's CPU decode of a token takes far longer), and the events in
		// order, ttft ≤ last text ≤ e2e, with tpot_event the mean gap between them.
		if r.TTFT == nil || *r.TTFT <= 0 {
			t.Errorf("%s: ttft %v", id, r.TTFT)
		}
		for name, v := range map[string]*time.Duration{"tpot_event": r.TPOTEvent, "tpot_token": r.TPOTToken} {
			if v == nil || *v < 10*time.Microsecond {
				t.Errorf("%s: %s %v", id, name, v)
			}
		}
		if r.TTFT == nil || r.LastText == nil || r.E2E == nil || *r.E2E < *r.LastText || *r.LastText < *r.TTFT {
			t.Errorf("%s: ttft %v, last text %v, e2e %v out of order", id, r.TTFT, r.LastText, r.E2E)
		} else if r.TPOTEvent != nil && r.TextEvents > 1 && *r.TPOTEvent != (*r.LastText-*r.TTFT)/time.Duration(r.TextEvents-1) {
			t.Errorf("%s: tpot_event %v, want (last text %v − ttft %v) / %d gaps", id, *r.TPOTEvent, *r.LastText, *r.TTFT, r.TextEvents-1)
		}
		if r.OutputTokens == nil || *r.OutputTokens != c.Request.MaxTokens {
			t.Errorf("%s: %v output tokens, want max_tokens %d", id, r.OutputTokens, c.Request.MaxTokens)
		}
		if r.TextEvents < c.Request.MaxTokens/2 {
			t.Errorf("%s: %d text events for %d tokens", id, r.TextEvents, c.Request.MaxTokens)
		}
		if !r.CacheReset {
			t.Errorf("%s: the prompt cache was not reset", id)
		}
		// prompt_tokens is what the server bills, its chat template included: ollama has no
		// /tokenize, so the prompt was calibrated on its own usage.prompt_tokens.
		if r.PromptTokensReported == nil || *r.PromptTokensReported != c.Request.PromptTokens {
			t.Errorf("%s: the server billed %v prompt tokens, want prompt_tokens %d", id, r.PromptTokensReported, c.Request.PromptTokens)
		}
		if r.PromptBuilt != "calibrated on usage.prompt_tokens" {
			t.Errorf("%s: prompt built by %q", id, r.PromptBuilt)
		}
	}
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != results.StatusComplete || len(man.Servers) != 1 || man.Servers[0].EngineVersion == "" {
		t.Errorf("manifest: status %s, servers %+v", man.Status, man.Servers)
	}
	logs, _ := filepath.Glob(filepath.Join(folder, results.LogsDir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("server logs %v", logs)
	}
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "Listening on") {
		t.Errorf("the server log lacks ollama's own lines:\n%s", b)
	}
}
