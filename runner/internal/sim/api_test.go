package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHealthVersionModels(t *testing.T) {
	_, ts := startServer(t, func(c *Config) { c.ServedModelName = "alias"; c.MaxModelLen = 1024 })
	resp, b := get(t, ts, "/health")
	if resp.StatusCode != 200 || len(b) != 0 || resp.Header.Get("Content-Length") != "0" {
		t.Errorf("/health: HTTP %d, %d bytes, Content-Length %q; want 200, empty", resp.StatusCode, len(b), resp.Header.Get("Content-Length"))
	}
	resp, b = get(t, ts, "/version")
	if resp.StatusCode != 200 || string(b) != `{"version":"0.0.0+sim"}` {
		t.Errorf("/version: HTTP %d %s", resp.StatusCode, b)
	}
	resp, b = get(t, ts, "/v1/models")
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/models: HTTP %d", resp.StatusCode)
	}
	ref, err := os.ReadFile(filepath.Join("testdata", "vllm_shapes", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := skeleton(t, string(b)), skeleton(t, string(ref)); !slices.Equal(got, want) {
		t.Errorf("/v1/models keys differ from vLLM's:\n got %v\nwant %v", got, want)
	}
	var m struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Data) != 1 {
		t.Fatalf("/v1/models: %v %s", err, b)
	}
	if d := m.Data[0]; d.ID != "alias" || d.Root != "sim/golden" || d.OwnedBy != "vllm" || d.MaxModelLen != 1024 {
		t.Errorf("/v1/models card %+v", d)
	}
	// The served name is the one requests must use.
	resp, b, _ = post(t, ts, "/v1/completions", `{"model":"alias","prompt":"the","max_tokens":1}`, nil)
	if resp.StatusCode != 200 {
		t.Errorf("request with the served name: HTTP %d %s", resp.StatusCode, b)
	}
	resp, _, _ = post(t, ts, "/v1/completions", `{"model":"sim/golden","prompt":"the","max_tokens":1}`, nil)
	if resp.StatusCode != 404 {
		t.Errorf("request with the root name instead of the served one: HTTP %d, want 404", resp.StatusCode)
	}
}

func TestRoutes(t *testing.T) {
	_, ts := startServer(t, nil)
	cases := []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/nope", 404, `{"detail":"Not Found"}`},
		{"GET", "/v1/completions", 405, `{"detail":"Method Not Allowed"}`},
		{"POST", "/health", 405, `{"detail":"Method Not Allowed"}`},
		{"GET", "/reset_prefix_cache", 404, `{"detail":"Not Found"}`},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, nil)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 200)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(b[:n]) != tc.body {
			t.Errorf("%s %s: HTTP %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, b[:n], tc.status, tc.body)
		}
	}
}

func TestTokenize(t *testing.T) {
	_, ts := startServer(t, nil)
	cases := []struct {
		body  string
		count int
	}{
		{`{"prompt":"the"}`, 2},                            // BOS + "the"
		{`{"prompt":"the","add_special_tokens":false}`, 1}, //
		{`{"prompt":"hello world"}`, 3},                    // BOS "hello" " world"
		{`{"prompt":"xyz","add_special_tokens":false}`, 3}, // unknown word: one token per character
		{`{"prompt":" the the.","add_special_tokens":false}`, 3},
		{`{"prompt":"é😀","add_special_tokens":false}`, 2},
		{`{"prompt":"<s>hi</s>","add_special_tokens":false}`, 3},
		{`{"prompt":"","add_special_tokens":false}`, 0},
		// The chat template renders "<s><|user|>\nhi<|end|>\n<|assistant|>\n": 8 tokens.
		{`{"model":"sim/golden","messages":[{"role":"user","content":"hi"}]}`, 8},
	}
	for _, tc := range cases {
		resp, b, _ := post(t, ts, "/tokenize", tc.body, nil)
		var r struct {
			Count       int   `json:"count"`
			MaxModelLen int   `json:"max_model_len"`
			Tokens      []int `json:"tokens"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
			t.Errorf("%s: HTTP %d %s", tc.body, resp.StatusCode, b)
			continue
		}
		if r.Count != tc.count || len(r.Tokens) != tc.count || r.MaxModelLen != 2048 {
			t.Errorf("%s: count %d, %d tokens, max_model_len %d; want count %d", tc.body, r.Count, len(r.Tokens), r.MaxModelLen, tc.count)
		}
		if !strings.HasPrefix(string(b), `{"count":`) || !strings.HasSuffix(string(b), `"token_strs":null}`) {
			t.Errorf("%s: key order differs from vLLM's count, max_model_len, tokens, token_strs: %s", tc.body, b)
		}
	}

	_, b, _ := post(t, ts, "/tokenize", `{"prompt":"hello world","return_token_strs":true}`, nil)
	if !strings.Contains(string(b), `"token_strs":["<s>","hello"," world"]`) {
		t.Errorf("return_token_strs: %s", b)
	}
	_, b, _ = post(t, ts, "/detokenize", `{"tokens":[1,1380,1381]}`, nil)
	var d struct{ Prompt string }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	_, b2, _ := post(t, ts, "/tokenize", fmt.Sprintf(`{"prompt":%q,"add_special_tokens":false}`, d.Prompt), nil)
	if !strings.Contains(string(b2), `"tokens":[1,1380,1381]`) {
		t.Errorf("detokenize %q then tokenize gave %s", d.Prompt, b2)
	}
	resp, b, _ := post(t, ts, "/detokenize", `{"tokens":[999]}`, nil)
	if resp.StatusCode != 400 {
		t.Errorf("detokenize of an unknown id: HTTP %d %s", resp.StatusCode, b)
	}
}

// TestGeneratedTextTokenizes checks that /tokenize of the generated text gives back exactly the
// generated token ids (EOS aside), so a client counting tokens with /tokenize gets the truth.
func TestGeneratedTextTokenizes(t *testing.T) {
	_, ts := startServer(t, func(c *Config) { c.EOSProbability = 0.05 })
	for seed := range 20 {
		_, b, _ := post(t, ts, "/v1/completions",
			fmt.Sprintf(`{"prompt":"the","max_tokens":50,"seed":%d,"return_token_ids":true}`, seed), nil)
		var r struct {
			Choices []struct {
				Text     string `json:"text"`
				TokenIDs []int  `json:"token_ids"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%v: %s", err, b)
		}
		ids := slices.DeleteFunc(slices.Clone(r.Choices[0].TokenIDs), func(id int) bool { return id == eosID })
		if len(r.Choices[0].TokenIDs) != r.Usage.CompletionTokens {
			t.Errorf("seed %d: %d token ids, usage says %d", seed, len(r.Choices[0].TokenIDs), r.Usage.CompletionTokens)
		}
		_, tb, _ := post(t, ts, "/tokenize", fmt.Sprintf(`{"prompt":%q,"add_special_tokens":false}`, r.Choices[0].Text), nil)
		var tok struct{ Tokens []int }
		json.Unmarshal(tb, &tok)
		if !slices.Equal(tok.Tokens, ids) {
			t.Errorf("seed %d: text %q tokenizes to %v, generated %v", seed, r.Choices[0].Text, tok.Tokens, ids)
		}
	}
}

func TestRequestValidation(t *testing.T) {
	_, ts := startServer(t, func(c *Config) { c.MaxModelLen = 64 })
	cases := []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"not json", "/v1/completions", `{"prompt":`, 400, "not a JSON object"},
		{"wrong type", "/v1/completions", `{"prompt":"x","max_tokens":"many"}`, 400, "invalid request"},
		{"no prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt is required"},
		{"two prompts", "/v1/completions", `{"prompt":["a","b"]}`, 400, "one prompt per request"},
		{"n=2", "/v1/completions", `{"prompt":"a","n":2}`, 400, "n=2"},
		{"too long", "/v1/completions", `{"prompt":"a","max_tokens":63}`, 400, "maximum context length is 64 tokens"},
		{"prompt too long", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 70) + `"}`, 400, "maximum context length is 64 tokens"},
		{"zero max_tokens", "/v1/completions", `{"prompt":"a","max_tokens":0}`, 400, "max_tokens must be at least 1"},
		{"min above max", "/v1/completions", `{"prompt":"a","max_tokens":2,"min_tokens":3}`, 400, "min_tokens"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "not supported"},
		{"bad fault header", "/v1/completions", `{"prompt":"a"}`, 400, "X-Sim-Fault"},
		{"token id prompt", "/v1/completions", `{"prompt":[1,1000,1001],"max_tokens":2}`, 200, `"prompt_tokens":3`},
		{"chat default max_tokens fills the context", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}]}`, 200, `"completion_tokens":56`},
		{"completions default max_tokens is 16", "/v1/completions", `{"prompt":"a"}`, 200, `"completion_tokens":16`},
		{"parts content", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":2}`, 200, `"completion_tokens":2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.name == "bad fault header" {
				h["X-Sim-Fault"] = "explode"
			}
			resp, b, _ := post(t, ts, tc.path, tc.body, h)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.msg) {
				t.Errorf("HTTP %d %s; want %d containing %q", resp.StatusCode, b, tc.status, tc.msg)
			}
			if tc.status == 400 && !strings.Contains(string(b), `"type":"BadRequestError","param":null,"code":400}`) {
				t.Errorf("error body is not vLLM's: %s", b)
			}
		})
	}
}

func TestUnknownFieldsWarnAndRequestID(t *testing.T) {
	log := &lockedBuffer{}
	_, ts := startServer(t, func(c *Config) { c.Log = log })
	resp, b, _ := post(t, ts, "/v1/completions", `{"prompt":"a","max_tokens":1,"frobnicate":true,"temperature":0.5}`,
		map[string]string{"X-Request-Id": "abc123"})
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d %s", resp.StatusCode, b)
	}
	if !strings.Contains(string(b), `"id":"cmpl-abc123"`) {
		t.Errorf("X-Request-Id not used for the id: %s", b)
	}
	out := log.String()
	if !strings.Contains(out, "WARNING") || !strings.Contains(out, "ignored: {'frobnicate'}") {
		t.Errorf("no warning about the unknown field:\n%s", out)
	}
	if strings.Contains(out, "temperature") {
		t.Errorf("warned about a known field:\n%s", out)
	}
	if !strings.Contains(out, `"POST /v1/completions HTTP/1.1" 200 OK`) {
		t.Errorf("no access log line:\n%s", out)
	}
}

func TestAPIKey(t *testing.T) {
	_, ts := startServer(t, func(c *Config) { c.APIKey = "sekret" })
	body := `{"prompt":"the","max_tokens":1}`
	resp, b, _ := post(t, ts, "/v1/completions", body, nil)
	if resp.StatusCode != 401 || string(b) != `{"error":"Unauthorized"}` {
		t.Errorf("no key: HTTP %d %s, want 401", resp.StatusCode, b)
	}
	resp, _, _ = post(t, ts, "/v1/completions", body, map[string]string{"Authorization": "Bearer wrong"})
	if resp.StatusCode != 401 {
		t.Errorf("wrong key: HTTP %d, want 401", resp.StatusCode)
	}
	resp, b, _ = post(t, ts, "/v1/completions", body, map[string]string{"Authorization": "Bearer sekret"})
	if resp.StatusCode != 200 {
		t.Errorf("right key: HTTP %d %s", resp.StatusCode, b)
	}
	if r, _ := get(t, ts, "/health"); r.StatusCode != 200 {
		t.Errorf("/health needs no key, got HTTP %d", r.StatusCode)
	}
}
