package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeServer imitates the side endpoints of a vLLM server, with response bodies in the shapes
// vLLM was seen to send.
type fakeServer struct {
	mu       sync.Mutex
	models   string // body of /v1/models
	healthy  bool
	devMode  bool
	lastAuth string
	lastBody map[string]any
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastAuth = r.Header.Get("Authorization")
	switch r.Method + " " + r.URL.Path {
	case "POST /tokenize":
		f.lastBody = nil
		if err := json.NewDecoder(r.Body).Decode(&f.lastBody); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		prompt, _ := f.lastBody["prompt"].(string)
		n := len(strings.Fields(prompt))
		tokens := []int{}
		if add, ok := f.lastBody["add_special_tokens"].(bool); !ok || add {
			tokens = append(tokens, 1)
		}
		for i := 0; i < n; i++ {
			tokens = append(tokens, 100+i)
		}
		json.NewEncoder(w).Encode(map[string]any{"count": len(tokens), "max_model_len": 1024, "tokens": tokens})
	case "GET /v1/models":
		io.WriteString(w, f.models)
	case "GET /version":
		io.WriteString(w, `{"version":"0.6.3.post1"}`)
	case "GET /health":
		if !f.healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	case "POST /reset_prefix_cache":
		if !f.devMode {
			http.NotFound(w, r)
		}
	case "GET /metrics":
		b, _ := os.ReadFile(filepath.Join("testdata", "metrics", "vllm_v1_two_engines.prom"))
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{healthy: true,
		models: `{"object":"list","data":[{"id":"tiny","object":"model","created":1751441887,"owned_by":"vllm","root":"/models/tiny","parent":null,"max_model_len":1024,"permission":[{"id":"modelperm-0a1b2c3d4e5f6a7b","object":"model_permission"}]}]}`}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, &Client{BaseURL: srv.URL + "/", HTTP: srv.Client(), APIKey: "k-123"}
}

func TestTokenize(t *testing.T) {
	f, c := newFake(t)
	ctx := context.Background()
	yes, no := true, false
	r, err := c.Tokenize(ctx, TokenizeRequest{Model: "tiny", Prompt: "a b c", AddSpecialTokens: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 4 || r.MaxModelLen != 1024 || len(r.Tokens) != 4 || r.Tokens[0] != 1 {
		t.Errorf("with special tokens: %+v", r)
	}
	if f.lastBody["model"] != "tiny" || f.lastBody["add_special_tokens"] != true || f.lastAuth != "Bearer k-123" {
		t.Errorf("request body %v, auth %q", f.lastBody, f.lastAuth)
	}
	r, err = c.Tokenize(ctx, TokenizeRequest{Model: "tiny", Prompt: "a b c", AddSpecialTokens: &no})
	if err != nil || r.Count != 3 {
		t.Errorf("without special tokens: %+v, %v", r, err)
	}
	if _, sent := f.lastBody["messages"]; sent {
		t.Error("empty messages were sent")
	}
}

func TestModels(t *testing.T) {
	tests := []struct {
		name, body string
		want       []Model
		err        bool
	}{
		{"max_model_len and root", `{"object":"list","data":[{"id":"served-alias","object":"model","root":"org/Real-Model","parent":null,"max_model_len":262144}]}`,
			[]Model{{"served-alias", "org/Real-Model", 262144}}, false},
		{"older vLLM without max_model_len", `{"object":"list","data":[{"id":"glm","object":"model","created":1717567231,"owned_by":"vllm","root":"glm","parent":null,"permission":[]}]}`,
			[]Model{{"glm", "glm", 0}}, false},
		{"ollama-style entry", `{"object":"list","data":[{"id":"tiny:latest","object":"model","created":1,"owned_by":"library"}]}`,
			[]Model{{"tiny:latest", "", 0}}, false},
		{"truncated body", `{"object":"list","data":[{"id":"facebook/opt-125m","object":"model","max_model_len":2048,"permission":[{"id":"p","is_blocking":false`,
			nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFake(t)
			f.models = tt.body
			got, err := c.Models(context.Background())
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && (len(got) != len(tt.want) || got[0] != tt.want[0]) {
				t.Errorf("Models() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVersionHealthReset(t *testing.T) {
	f, c := newFake(t)
	ctx := context.Background()
	if v, err := c.Version(ctx); err != nil || v != "0.6.3.post1" {
		t.Errorf("Version() = %q, %v", v, err)
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("Health() = %v", err)
	}
	f.healthy = false
	var he *HTTPError
	if err := c.Health(ctx); !errors.As(err, &he) || he.Status != 503 {
		t.Errorf("unhealthy Health() = %v", err)
	}
	err := c.ResetPrefixCache(ctx)
	if !errors.As(err, &he) || he.Status != 404 || he.Method != "POST" || !strings.HasSuffix(he.URL, "/reset_prefix_cache") {
		t.Errorf("ResetPrefixCache without dev mode = %v", err)
	}
	if !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("error text %q", err)
	}
	f.devMode = true
	if err := c.ResetPrefixCache(ctx); err != nil {
		t.Errorf("ResetPrefixCache in dev mode = %v", err)
	}
}

func TestClientMetrics(t *testing.T) {
	_, c := newFake(t)
	m, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := m.Merged(MetricITL); !ok || h.Count != 1152 {
		t.Errorf("ITL merged count %v, %v", h.Count, ok)
	}
}

func TestConnectionError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := &Client{BaseURL: url}
	err := c.Health(context.Background())
	var he *HTTPError
	if err == nil || errors.As(err, &he) {
		t.Errorf("Health() against a closed port = %v, want a connection error", err)
	}
}

func TestNewStreamRequest(t *testing.T) {
	c := &Client{BaseURL: "http://127.0.0.1:8000/", APIKey: "sk"}
	body, err := Body(Params{API: Chat, Prompt: "hi", Options: Options{IncludeUsage: true}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.NewStreamRequest(context.Background(), Chat, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || req.URL.String() != "http://127.0.0.1:8000/v1/chat/completions" {
		t.Errorf("request %s %s", req.Method, req.URL)
	}
	for k, v := range map[string]string{"Accept": "text/event-stream", "Accept-Encoding": "identity", "Content-Type": "application/json", "Authorization": "Bearer sk"} {
		if req.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, req.Header.Get(k), v)
		}
	}
	got, _ := io.ReadAll(req.Body)
	if string(got) != string(body) {
		t.Errorf("body %s", got)
	}
	if _, err := c.NewStreamRequest(context.Background(), "x", body); err == nil {
		t.Error("unknown api accepted")
	}
}

func TestCheckResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: return_token_ids"}}`)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	err = CheckResponse(resp)
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 400 {
		t.Fatalf("CheckResponse = %v", err)
	}
	if _, d := Degrade(he.Status, he.Body, Options{ReturnTokenIDs: true}); d != DropReturnTokenIDs {
		t.Errorf("Degrade on the HTTPError's body dropped %q", d)
	}
}

// TestMaxModelLenAnyNumber: a max_model_len that does not fit an int, or is no whole count,
// reads as "not reported" and never fails the answer. SGLang's /tokenize answers its
// tokenizer's model_max_length (python/sglang/srt/entrypoints/openai/serving_tokenize.py,
// v0.4.7 to v0.5.x), which transformers sets to int(1e30) when a model names no limit, and
// Python's json writes that integer in full.
func TestMaxModelLenAnyNumber(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{"4096", 4096},
		{"1000000000000000019884624838656", 0}, // int(1e30)
		{"1e30", 0},
		{"32768.0", 32768},
		{"-1", 0}, // SGLang when the tokenizer has no model_max_length attribute
		{"2.5", 0},
		{"null", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/tokenize":
				fmt.Fprintf(w, `{"tokens":[9906],"count":1,"max_model_len":%s}`, tc.raw)
			case "/v1/models":
				fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":%s}]}`, tc.raw)
			}
		}))
		c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
		r, err := c.Tokenize(context.Background(), TokenizeRequest{Prompt: "hello"})
		if err != nil || r.Count != 1 || r.MaxModelLen != tc.want {
			t.Errorf("tokenize max_model_len %s: %+v, %v; want %d", tc.raw, r, err, tc.want)
		}
		ms, err := c.Models(context.Background())
		if err != nil || len(ms) != 1 || ms[0].MaxModelLen != tc.want {
			t.Errorf("models max_model_len %s: %+v, %v; want %d", tc.raw, ms, err, tc.want)
		}
		srv.Close()
	}
}

// TestPromptTokens checks that PromptTokens sends a one-token, non-streamed request with the
// text as a completions prompt or as one user message, reads usage.prompt_tokens, and refuses
// an answer without it or with ollama's zeroed usage.
func TestPromptTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		api     API
		answer  string
		want    int
		wantErr string
	}{
		{"completions", Completions, `{"usage":{"prompt_tokens":57,"completion_tokens":1,"total_tokens":58}}`, 57, ""},
		{"chat", Chat, `{"usage":{"prompt_tokens":60,"completion_tokens":1,"total_tokens":61}}`, 60, ""},
		{"no usage", Completions, `{"choices":[{"text":"a"}]}`, 0, "no usage.prompt_tokens"},
		{"zeroed usage", Chat, `{"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, 0, "usage.prompt_tokens is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			var path string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				json.NewDecoder(r.Body).Decode(&got)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			}))
			defer ts.Close()
			n, err := (&Client{BaseURL: ts.URL}).PromptTokens(context.Background(), tc.api, "m", "hello world")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("PromptTokens = %d, %v; want %d", n, err, tc.want)
			}
			if path != tc.api.Path() || got["max_tokens"] != float64(1) || got["stream"] != false || got["model"] != "m" {
				t.Errorf("sent %s %v", path, got)
			}
			text := got["prompt"]
			if tc.api == Chat {
				text = got["messages"].([]any)[0].(map[string]any)["content"]
			}
			if text != "hello world" {
				t.Errorf("sent the text as %v", got)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	versions := map[string]string{
		`{"version":"0.8.4"}`:                  "0.8.4",
		`{"build_info":"b6497-cd08fc3e"}`:      "b6497-cd08fc3e",
		`{"version":"0.4.9","build_info":"x"}`: "0.4.9",
		`{"version":4}`:                        "",
		`not json`:                             "",
	}
	for in, want := range versions {
		if got := ParseVersion([]byte(in)); got != want {
			t.Errorf("ParseVersion(%s) = %q, want %q", in, got, want)
		}
	}
}
