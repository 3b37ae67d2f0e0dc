package orchestrate

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/openai"
)

// TestServerTokenizes checks which /tokenize answers make the server's tokenizer the one that
// synthesises prompts and counts output: one that counts text, not one that answers 200 with no
// tokens for a request it does not understand (llama.cpp's /tokenize reads "content", not
// "prompt", and returns {"tokens":[]} otherwise).
func TestServerTokenizes(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"vllm", 200, `{"count":1,"max_model_len":1024,"tokens":[15339]}`, true},
		{"tokens only", 200, `{"tokens":[15339]}`, true},
		{"empty token list", 200, `{"tokens":[]}`, false},
		{"zero count", 200, `{"count":0,"max_model_len":1024,"tokens":[]}`, false},
		{"not found", 404, `{"error":"404 page not found"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			if got := serverTokenizes(context.Background(), &openai.Client{BaseURL: ts.URL}, "m"); got != tt.want {
				t.Errorf("serverTokenizes = %v, want %v", got, tt.want)
			}
		})
	}
}
