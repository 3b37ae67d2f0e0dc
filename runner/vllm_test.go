package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestVLLMExperimentsAgainstSim runs the committed vLLM experiments end to end with a stand-in
// `vllm` executable on PATH: it records its command line and then runs the simulator, which
// speaks vLLM's dialect, with the same arguments. This checks the vLLM preset's exact command
// line, its environment (VLLM_SERVER_DEV_MODE for the cache reset), readiness, the cache reset
// before every request, and the whole measurement path, without a GPU or vLLM itself.
func TestVLLMExperimentsAgainstSim(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	for _, name := range []string{"baseline", "prefill-sweep", "decode-sweep"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, configs, file := committedExperiment(t, name)
			dir := t.TempDir()
			stand := filepath.Join(dir, "bin")
			if err := os.Mkdir(stand, 0o755); err != nil {
				t.Fatal(err)
			}
			argvFile := filepath.Join(dir, "argv")
			envFile := filepath.Join(dir, "env")
			script := fmt.Sprintf(`#!/bin/sh
# A stand-in for vLLM: record how it was started, then serve the simulator, fast: the
# timings added after vLLM's arguments override the simulator's defaults.
printf '%%s\n' "$@" > %q
echo "VLLM_SERVER_DEV_MODE=$VLLM_SERVER_DEV_MODE" > %q
[ "$1" = serve ] || { echo "unexpected entrypoint: $1" >&2; exit 64; }
shift
exec %q sim "$@" --queue-delay 0s --prefill-per-token 1us --decode-per-token 200us
`, argvFile, envFile, bin)
			if err := os.WriteFile(filepath.Join(stand, "vllm"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			marker := fmt.Sprintf("RUNNER_TEST_RUN=vllm-%s-%d", name, time.Now().UnixNano())
			root := filepath.Join(dir, "results")
			code, stdout, stderr := runIn(t, "", bin, []string{file, "--results", root, "--quiet"},
				"PATH="+stand+string(os.PathListSeparator)+os.Getenv("PATH"), marker)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			checkNoSurvivors(t, marker)

			b, err := os.ReadFile(argvFile)
			if err != nil {
				t.Fatal(err)
			}
			argv := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(argv) < 2 {
				t.Fatalf("argv %q", argv)
			}
			port := argv[len(argv)-1]
			want := []string{"serve", e.Server.Model, "--dtype", e.Server.Dtype, "--max-model-len", fmt.Sprint(e.Server.MaxModelLen),
				"--host", "127.0.0.1", "--port", port}
			if !slices.Equal(argv, want) {
				t.Errorf("vllm started as\n  %q\nwant\n  %q", argv, want)
			}
			if env, _ := os.ReadFile(envFile); strings.TrimSpace(string(env)) != "VLLM_SERVER_DEV_MODE=1" {
				t.Errorf("environment: %q", env)
			}

			folder, reqs, byID := readRun(t, root, e.Name, configs)
			for _, r := range reqs {
				c := byID[r.ConfigID]
				if r.Status != record.StatusOK || !r.CacheReset || r.TokenSource != record.SourceTokenIDs {
					t.Fatalf("%s-%d: %s %s %q, cache reset %v, source %q", r.ConfigID, r.Seq, r.Status, r.ErrorClass, r.Error, r.CacheReset, r.TokenSource)
				}
				if *r.OutputTokens != c.Request.MaxTokens {
					t.Errorf("%s-%d: %d output tokens, want %d", r.ConfigID, r.Seq, *r.OutputTokens, c.Request.MaxTokens)
				}
				if n := c.Request.PromptTokens; n > 0 && (r.PromptTokensReported == nil || *r.PromptTokensReported != n) {
					t.Errorf("%s-%d: prompt tokens reported %v, want exactly %d", r.ConfigID, r.Seq, r.PromptTokensReported, n)
				}
			}
			man, _ := results.ReadManifest(folder)
			if len(man.Servers) != 1 || man.Servers[0].EngineVersion != "0.0.0+sim" {
				t.Errorf("servers %+v", man.Servers)
			}
		})
	}
}
