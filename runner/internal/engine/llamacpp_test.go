package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
)

// TestLlamaReset checks the cache reset of the llamacpp preset against fake llama-servers that
// answer POST /completion as tools/server/server.cpp does (b6000 to b7000): "timings.cache_n"
// counts the prompt tokens taken from a slot's cache, which "cache_prompt": false must keep at
// 0. A server that ignores the field takes the whole repeated prompt from the cache; an old
// build without timings is taken at its word.
func TestLlamaReset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		honours bool // cache_prompt false keeps cache_n at 0
		timings bool // answers carry timings
		wantErr string
	}{
		{"honours cache_prompt", true, true, ""},
		{"ignores cache_prompt", false, true, "took 24 prompt tokens from its cache"},
		{"no timings", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/completion" {
					http.NotFound(w, r)
					return
				}
				var in map[string]any
				json.NewDecoder(r.Body).Decode(&in)
				if in["cache_prompt"] != false || in["n_predict"] != 1.0 {
					t.Errorf("probe body %v, want cache_prompt false and n_predict 1", in)
				}
				cached := 0
				if calls > 0 && !tc.honours {
					cached = 24
				}
				calls++
				w.Header().Set("Content-Type", "application/json")
				if !tc.timings {
					body := `{"content":" x","stop":true,"tokens_predicted":1,"tokens_evaluated":25}`
					fmt.Fprint(w, body)
					return
				}
				fmt.Fprintf(w, `{"content":" x","stop":true,"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":3.1,"predicted_n":1,"predicted_ms":9.0}}`, cached, 25-cached)
			}))
			defer srv.Close()
			h := &Hook{Engine: "llamacpp", BaseURL: srv.URL, api: &openai.Client{BaseURL: srv.URL, HTTP: srv.Client()}}
			reset := llamaReset()
			err := reset(context.Background(), h)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("reset: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("reset: %v, want an error saying %q", err, tc.wantErr)
			}
			if calls != 2 {
				t.Errorf("%d probe requests, want 2", calls)
			}
			if err == nil {
				// Checked once: later resets before each request send nothing.
				if err := reset(context.Background(), h); err != nil || calls != 2 {
					t.Errorf("second reset: %v after %d requests", err, calls)
				}
			}
		})
	}
}

// TestLlamaPresetResets checks that the llamacpp preset resets by request field and names the
// way it does it.
func TestLlamaPresetResets(t *testing.T) {
	l, err := llamaCppPreset(experiment.Server{Engine: "llamacpp", Model: "m.gguf"}, Target{Host: "127.0.0.1", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	if l.Reset == nil || l.ResetFields["cache_prompt"] != false || !strings.Contains(l.ResetMechanism, "cache_prompt") {
		t.Errorf("launch reset %v, fields %v, mechanism %q", l.Reset != nil, l.ResetFields, l.ResetMechanism)
	}
	s := &Server{launch: l, canReset: true}
	if f := s.CacheResetFields(); f["cache_prompt"] != false {
		t.Errorf("CacheResetFields = %v", f)
	}
	f := s.CacheResetFields()
	f["cache_prompt"] = true
	if l.ResetFields["cache_prompt"] != false {
		t.Error("CacheResetFields handed out the preset's own map")
	}
	if (&Server{launch: l}).CacheResetFields() != nil {
		t.Error("a server that cannot reset has reset fields")
	}
}
