package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// OllamaVersion is the ollama release the project builds and tests against (.ci/build-ollama.sh).
const OllamaVersion = "v0.17.4"

// OllamaEnv names the variable that points at the ollama executable to use.
const OllamaEnv = "RUNNER_OLLAMA"

// OllamaCachePath returns where .ci/build-ollama.sh (make ollama) puts the pinned build:
// $RUNNER_CACHE_DIR/ollama-VERSION/bin/ollama, or without it
// ${XDG_CACHE_HOME:-$HOME/.cache}/runner/ollama-VERSION/bin/ollama.
func OllamaCachePath() (string, error) {
	// .ci/build-ollama.sh builds into $RUNNER_CACHE_DIR when it is set.
	if dir := os.Getenv(CacheDirEnv); dir != "" {
		return filepath.Join(dir, "ollama-"+OllamaVersion, "bin", "ollama"), nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("ollama cache path: %w", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "runner", "ollama-"+OllamaVersion, "bin", "ollama"), nil
}

// CacheDirEnv names the folder that the engine builds go to, in place of the user cache's
// runner folder.
const CacheDirEnv = "RUNNER_CACHE_DIR"

// FindOllama returns the ollama executable to run: $RUNNER_OLLAMA when set (it must exist),
// else ollama on PATH, else the pinned build in the user cache (OllamaCachePath).
func FindOllama() (string, error) {
	if p := os.Getenv(OllamaEnv); p != "" {
		if err := isExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", OllamaEnv, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p, nil
	}
	cached, err := OllamaCachePath()
	if err == nil && isExecutable(cached) == nil {
		return cached, nil
	}
	where := "the user cache"
	if cached != "" {
		where = cached
	}
	return "", fmt.Errorf("ollama not found: set %s, put ollama on PATH, or run `make ollama` (builds %s into %s)", OllamaEnv, OllamaVersion, where)
}

// ollamaModelName turns a GGUF file name into the name the model is registered under:
// the base name without .gguf, lowercased, with anything ollama does not accept in a name
// replaced by '-'.
func ollamaModelName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), "_.-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "model"
	}
	return name
}

// ollamaPreset runs `ollama serve` with OLLAMA_HOST on the chosen address, OLLAMA_KEEP_ALIVE=-1
// (a loaded model stays loaded) and, with server.max_model_len, OLLAMA_CONTEXT_LENGTH. Readiness
// is GET /api/version, which also gives the version.
//
// server.model is either the path of a GGUF file or the name of a model already in the store
// (server.env may point OLLAMA_MODELS at one; nothing is ever pulled). A GGUF file is registered
// after boot with `ollama create NAME -f Modelfile` (the same binary, against the same server),
// in a store inside the server's scratch directory unless server.env sets OLLAMA_MODELS; NAME
// is the file's base name without .gguf, and it is the model name requests use. Either way the
// model is then loaded with an empty generate request, so that no measured request pays for
// loading it.
//
// ollama has no endpoint that empties its prompt cache. The preset resets it the only way
// ollama allows: it unloads the model (a generate request with keep_alive 0), which ends the
// runner process that holds the cache, and loads it again. That takes a model load per reset
// (a fraction of a second for a small model), before t0, so it costs time but no accuracy.
func ollamaPreset(srv experiment.Server, t Target) (*Launch, error) {
	if srv.Model == "" {
		return nil, errors.New("server.model is required: the path of a .gguf file, or the name of a model in the ollama store")
	}
	if _, set := srv.Env["OLLAMA_HOST"]; set {
		return nil, errors.New("server.env must not set OLLAMA_HOST: the runner chooses the address (server.host, server.port)")
	}
	bin, err := FindOllama()
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"OLLAMA_HOST":       t.Addr(),
		"OLLAMA_KEEP_ALIVE": "-1",
	}
	if srv.MaxModelLen > 0 {
		env["OLLAMA_CONTEXT_LENGTH"] = strconv.Itoa(srv.MaxModelLen)
	}
	name, gguf := srv.Model, ""
	if strings.EqualFold(filepath.Ext(srv.Model), ".gguf") {
		if gguf, err = filepath.Abs(srv.Model); err != nil {
			return nil, fmt.Errorf("server.model %q: %w", srv.Model, err)
		}
		if st, err := os.Stat(gguf); err != nil {
			return nil, fmt.Errorf("server.model: %w", err)
		} else if st.IsDir() {
			return nil, fmt.Errorf("server.model %q is a directory, want a .gguf file", srv.Model)
		}
		name = ollamaModelName(gguf)
		env["OLLAMA_MODELS"] = filepath.Join(t.Dir, "models")
	}
	resetSaid := false
	return &Launch{
		Argv:        []string{bin, "serve"},
		Env:         env,
		BaseURL:     t.URL(),
		ReadyPaths:  []string{"/api/version"},
		VersionPath: "/api/version",
		AfterReady: func(ctx context.Context, h *Hook) error {
			if gguf != "" {
				if err := ollamaCreate(ctx, h, bin, name, gguf); err != nil {
					return err
				}
			}
			took, err := ollamaPreload(ctx, h, name)
			if err == nil {
				h.Logf("loaded model %q in %s", name, took)
			}
			return err
		},
		Reset: func(ctx context.Context, h *Hook) error {
			if err := ollamaUnload(ctx, h, name); err != nil {
				return err
			}
			took, err := ollamaPreload(ctx, h, name)
			// The reset runs before every request: said once, it is news; said every time,
			// it buries the requests' own lines.
			if err == nil && !resetSaid {
				resetSaid = true
				h.Logf("a cache reset reloads the model before each request (this one: %s)", took)
			}
			return err
		},
		ServedModel: func(context.Context, *Hook) (string, error) { return name, nil },
		APIKey:      apiKey(srv),
		Notes:       ignored(srv, "ollama"),
	}, nil
}

// ollamaCreate registers a GGUF file as model name on the running server.
func ollamaCreate(ctx context.Context, h *Hook, bin, name, gguf string) error {
	modelfile := filepath.Join(h.Dir, "Modelfile")
	if err := os.WriteFile(modelfile, []byte("FROM "+gguf+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", modelfile, err)
	}
	start := time.Now()
	if err := h.Run(ctx, bin, "create", name, "-f", modelfile); err != nil {
		return err
	}
	h.Logf("registered %s as model %q in %s", gguf, name, time.Since(start).Round(time.Millisecond))
	return nil
}

// ollamaUnload unloads the model: a generate request without a prompt and with keep_alive 0
// answers with done_reason "unload" once the model's runner is gone.
func ollamaUnload(ctx context.Context, h *Hook, name string) error {
	b, err := h.Post(ctx, "/api/generate", map[string]any{"model": name, "keep_alive": 0, "stream": false})
	if err != nil {
		return fmt.Errorf("unload model %q: %w", name, err)
	}
	var resp struct {
		Done       bool   `json:"done"`
		DoneReason string `json:"done_reason"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return fmt.Errorf("unload model %q: answer is not JSON: %w", name, err)
	}
	if resp.Error != "" || !resp.Done {
		return fmt.Errorf("unload model %q: %s", name, excerpt(b, 200))
	}
	return nil
}

// ollamaPreload loads the model into memory: a generate request without a prompt loads it and
// answers with done_reason "load"; keep_alive -1 keeps it loaded. It returns how long that took.
func ollamaPreload(ctx context.Context, h *Hook, name string) (time.Duration, error) {
	start := time.Now()
	b, err := h.Post(ctx, "/api/generate", map[string]any{"model": name, "keep_alive": -1, "stream": false})
	if err != nil {
		return 0, fmt.Errorf("load model %q: %w", name, err)
	}
	var resp struct {
		Done  bool   `json:"done"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return 0, fmt.Errorf("load model %q: answer is not JSON: %w", name, err)
	}
	if resp.Error != "" || !resp.Done {
		return 0, fmt.Errorf("load model %q: %s", name, excerpt(b, 200))
	}
	return time.Since(start).Round(time.Millisecond), nil
}
