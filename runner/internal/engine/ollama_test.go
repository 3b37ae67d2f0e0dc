package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine/enginetest"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/gguf"
)

func TestOllamaModelName(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/models/tiny.gguf", "tiny"},
		{"rel/Tiny-Llama_3.2.GGUF", "tiny-llama_3.2"},
		{"/m/my model (q4).gguf", "my-model--q4-"},
		{"/m/.hidden.gguf", "hidden"},
		{"/m/ü.gguf", "model"},
		{"/m/__.gguf", "model"},
		{"/m/" + strings.Repeat("a", 100) + ".gguf", strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		if got := ollamaModelName(tt.path); got != tt.want {
			t.Errorf("ollamaModelName(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// ollamaFakeBinary creates an executable file at path that does nothing.
func ollamaFakeBinary(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindOllama(t *testing.T) {
	dir := t.TempDir()
	explicit := filepath.Join(dir, "explicit", "ollama")
	onPath := filepath.Join(dir, "path", "ollama")
	cache := filepath.Join(dir, "cache")
	cached := filepath.Join(cache, "runner", "ollama-"+OllamaVersion, "bin", "ollama")
	ollamaFakeBinary(t, explicit)
	ollamaFakeBinary(t, onPath)
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		env, path   string
		withCache   bool
		want, error string
	}{
		{"variable wins", explicit, filepath.Dir(onPath), true, explicit, ""},
		{"variable must exist", filepath.Join(dir, "nope"), filepath.Dir(onPath), true, "", OllamaEnv},
		{"then PATH", "", filepath.Dir(onPath), true, onPath, ""},
		{"then the cache", "", empty, true, cached, ""},
		{"the cache named by RUNNER_CACHE_DIR", "", empty, true, cached, ""},
		{"else an error that says how to build it", "", empty, false, "", "make ollama"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(cache)
			if tt.withCache {
				ollamaFakeBinary(t, cached)
			}
			t.Setenv(OllamaEnv, tt.env)
			t.Setenv("PATH", tt.path)
			t.Setenv("XDG_CACHE_HOME", cache)
			t.Setenv(CacheDirEnv, "")
			if strings.Contains(tt.name, CacheDirEnv) {
				// The same binary, found through the variable while XDG_CACHE_HOME points
				// elsewhere.
				t.Setenv("XDG_CACHE_HOME", empty)
				t.Setenv(CacheDirEnv, filepath.Join(cache, "runner"))
			}
			got, err := FindOllama()
			if tt.error != "" {
				if err == nil || !strings.Contains(err.Error(), tt.error) {
					t.Errorf("FindOllama() = %q, %v; want an error containing %q", got, err, tt.error)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FindOllama() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOllamaPreset(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "ollama")
	ollamaFakeBinary(t, bin)
	t.Setenv(OllamaEnv, bin)
	model := filepath.Join(dir, "Tiny.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.gguf"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := Target{Host: "127.0.0.1", Port: 41234, Dir: filepath.Join(dir, "scratch")}

	tests := []struct {
		name   string
		srv    experiment.Server
		env    map[string]string
		served string
		notes  int
		err    string
	}{
		{
			name: "gguf file",
			srv:  experiment.Server{Model: model},
			env: map[string]string{"OLLAMA_HOST": "127.0.0.1:41234", "OLLAMA_KEEP_ALIVE": "-1",
				"OLLAMA_MODELS": filepath.Join(target.Dir, "models")},
			served: "tiny",
		},
		{
			name:   "model in the store, with a context length",
			srv:    experiment.Server{Model: "llama3.2:1b", MaxModelLen: 2048},
			env:    map[string]string{"OLLAMA_HOST": "127.0.0.1:41234", "OLLAMA_KEEP_ALIVE": "-1", "OLLAMA_CONTEXT_LENGTH": "2048"},
			served: "llama3.2:1b",
		},
		{
			name:   "settings ollama does not take are noted",
			srv:    experiment.Server{Model: "m", Dtype: "half", Args: []string{"--x"}},
			env:    map[string]string{"OLLAMA_HOST": "127.0.0.1:41234", "OLLAMA_KEEP_ALIVE": "-1"},
			served: "m",
			notes:  2,
		},
		{name: "no model", srv: experiment.Server{}, err: "server.model is required"},
		{name: "missing file", srv: experiment.Server{Model: filepath.Join(dir, "gone.gguf")}, err: "no such file"},
		{name: "directory", srv: experiment.Server{Model: filepath.Join(dir, "folder.gguf")}, err: "is a directory"},
		{name: "own address", srv: experiment.Server{Model: "m", Env: map[string]string{"OLLAMA_HOST": "0.0.0.0:1"}}, err: "OLLAMA_HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ollamaPreset(tt.srv, target)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{bin, "serve"}; !reflect.DeepEqual(l.Argv, want) {
				t.Errorf("Argv = %q, want %q", l.Argv, want)
			}
			if !reflect.DeepEqual(l.Env, tt.env) {
				t.Errorf("Env = %v, want %v", l.Env, tt.env)
			}
			if !reflect.DeepEqual(l.ReadyPaths, []string{"/api/version"}) || l.VersionPath != "/api/version" {
				t.Errorf("readiness %q, version %q; want /api/version for both", l.ReadyPaths, l.VersionPath)
			}
			if l.ResetPath != "" {
				t.Errorf("ResetPath = %q: ollama has no cache reset endpoint", l.ResetPath)
			}
			if l.BaseURL != "http://127.0.0.1:41234" {
				t.Errorf("BaseURL = %q", l.BaseURL)
			}
			if l.AfterReady == nil || l.ServedModel == nil {
				t.Fatalf("AfterReady and ServedModel must be set")
			}
			if got, _ := l.ServedModel(context.Background(), nil); got != tt.served {
				t.Errorf("served model %q, want %q", got, tt.served)
			}
			if len(l.Notes) != tt.notes {
				t.Errorf("notes %q, want %d", l.Notes, tt.notes)
			}
		})
	}
}

// TestCPUEngineServesTinyModel boots the real engine on a generated model, under make
// test-engine (see enginetest). It checks that the preset registers
// and preloads the model before Start returns, that a streamed completion runs to max_tokens
// with many text events, and that Stop leaves no process of the group behind.
func TestCPUEngineServesTinyModel(t *testing.T) {
	bin := enginetest.Require(t, FindOllama)
	t.Logf("ollama: %s", bin)
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguf.WriteTinyLlamaFile(model, gguf.DefaultParams()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log, progress := &syncBuffer{}, &syncBuffer{}
	s, err := Start(ctx, experiment.Server{Engine: "ollama", Model: model, ReadyTimeout: 2 * time.Minute},
		StartOptions{Log: log, Progress: progress})
	if err != nil {
		t.Fatalf("Start: %v\nlog:\n%s", err, log.String())
	}
	pgid := s.PID()
	stopped := false
	defer func() {
		if !stopped {
			s.Stop(context.Background())
		}
	}()
	t.Logf("booted in %s, version %q; progress:\n%s", s.BootTime(), s.Version(), progress.String())
	if s.Model() != "tiny" {
		t.Errorf("served model %q, want tiny", s.Model())
	}
	if s.Version() == "" {
		t.Errorf("no version from /api/version")
	}

	// The model must already be loaded: /api/ps lists the models in memory.
	resp, err := http.Get(s.BaseURL() + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	var ps struct {
		Models []struct{ Name string } `json:"models"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ps)
	resp.Body.Close()
	if err != nil || len(ps.Models) != 1 || ps.Models[0].Name != "tiny:latest" {
		t.Errorf("/api/ps = %+v, %v; want tiny:latest loaded", ps, err)
	}

	const maxTokens = 32
	body := `{"model":"tiny","prompt":"the cat sat on the","max_tokens":32,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err = http.Post(s.BaseURL()+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	texts, completion := 0, -1
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct{ Text string } `json:"choices"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		switch {
		case len(c.Choices) == 0 && c.Usage != nil:
			completion = c.Usage.CompletionTokens
		case len(c.Choices) > 0 && c.Choices[0].Text != "":
			texts++
		}
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if completion != maxTokens {
		t.Errorf("usage.completion_tokens = %d, want %d: the model stopped early", completion, maxTokens)
	}
	if texts < maxTokens/2 {
		t.Errorf("%d text events for %d tokens", texts, maxTokens)
	}

	// A cache reset unloads the model and loads it again: the process that holds the model
	// (and its prompt cache) is replaced by a new one.
	if !s.CanResetCache() {
		t.Fatal("the ollama preset offers no cache reset")
	}
	before := modelRunners(pgid)
	if err := s.ResetCache(ctx); err != nil {
		t.Fatalf("ResetCache: %v", err)
	}
	after := modelRunners(pgid)
	if len(before) != 1 || len(after) != 1 || before[0] == after[0] {
		t.Errorf("model runner processes before reset %v, after %v; want one each, different", before, after)
	}

	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stopped = true
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists after Stop (kill -0: %v)", pgid, err)
	}
}

// modelRunners returns the live processes of the group that serve a loaded model
// ("ollama runner ... --model BLOB ...").
func modelRunners(pgid int) []int {
	var out []int
	for _, pid := range groupMembers(pgid) {
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmd), "\x00runner\x00") && strings.Contains(string(cmd), "\x00--model\x00") {
			out = append(out, pid)
		}
	}
	return out
}
