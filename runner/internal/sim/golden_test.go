package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const (
	cmplPrompt = `"prompt":"hello world, the sun is hot"`
	chatMsgs   = `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello, what is the time"}]`
)

// goldenCases are whole responses, compared byte for byte with testdata/golden/NAME.txt. Run
// The default error shape is vLLM's nested one (0.10.1 and later): the *_nested cases run with
// the default, and the older cases whose files hold the flat shape of vLLM up to 0.10.0 are
// pinned to it with flat.
//
// `go test ./runner/internal/sim -run TestGolden -update` to rewrite them after a deliberate change.
var goldenCases = []struct {
	name   string
	path   string
	body   string
	header map[string]string
	cfg    func(*Config)
}{
	{name: "cmpl_stream", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6,"stream":true}`},
	{name: "cmpl_stream_usage", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "cmpl_stream_continuous", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	{name: "cmpl_stream_token_ids", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	{name: "cmpl_nonstream", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6}`},
	{name: "cmpl_nonstream_token_ids", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":6,"return_token_ids":true}`},
	{name: "chat_stream", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":6,"stream":true}`},
	{name: "chat_stream_usage", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat_stream_continuous", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	{name: "chat_stream_token_ids", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":6,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	{name: "chat_nonstream", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":6}`},
	{name: "chat_stream_events_stamped", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":9,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		header: map[string]string{"X-Sim-Stamp": "1"},
		cfg:    func(c *Config) { c.TokensPerEvent = []int{1, 3}; c.SplitEvery = 2 }},
	{name: "chat_stream_eos", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":40,"min_tokens":2,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		cfg:  func(c *Config) { c.EOSProbability = 0.25 }},
	{name: "cmpl_stream_eos", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":40,"min_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		cfg:  func(c *Config) { c.EOSProbability = 0.25 }},
	{name: "err_context_length", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"max_tokens":5000}`, cfg: flat},
	{name: "err_context_length_nested", path: "/v1/chat/completions",
		body: `{` + chatMsgs + `,"max_tokens":5000}`},
	{name: "err_model_not_found", path: "/v1/completions",
		body: `{"model":"other/model",` + cmplPrompt + `}`, cfg: flat},
	{name: "err_stream_options_without_stream", path: "/v1/completions",
		body: `{` + cmplPrompt + `,"stream_options":{"include_usage":true}}`, cfg: flat},
	{name: "fault_error", path: "/v1/completions",
		body:   `{` + cmplPrompt + `,"max_tokens":6,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "error@2"}, cfg: flat},
	{name: "fault_error_nested", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":6,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "error@2"}},
	{name: "fault_error_eof", path: "/v1/completions",
		body:   `{` + cmplPrompt + `,"max_tokens":6,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "error-eof@3"}, cfg: flat},
	{name: "fault_malformed", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":4,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "malformed@2"}},
	{name: "fault_truncate", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":6,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "truncate@3"}},
	{name: "fault_refuse", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":6,"stream":true,"return_token_ids":true}`,
		header: map[string]string{"X-Sim-Fault": "refuse=return_token_ids"}, cfg: flat},
	{name: "fault_ignore", path: "/v1/chat/completions",
		body:   `{` + chatMsgs + `,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		header: map[string]string{"X-Sim-Fault": "ignore=continuous_usage_stats"}},
	{name: "fault_status_503", path: "/v1/completions",
		body:   `{` + cmplPrompt + `,"max_tokens":6,"stream":true}`,
		header: map[string]string{"X-Sim-Fault": "status=503"}, cfg: flat},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := startServer(t, tc.cfg)
			resp, body, err := post(t, ts, tc.path, tc.body, tc.header)
			if err != nil {
				t.Fatalf("reading the response: %v", err)
			}
			got := fmt.Appendf(nil, "HTTP %d\nContent-Type: %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("response differs from %s (run with -update after a deliberate change)\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// TestDeterministic checks that the same seed gives the same stream twice, and that a request's
// own seed picks its text.
func TestDeterministic(t *testing.T) {
	body := `{` + cmplPrompt + `,"max_tokens":12,"stream":true}`
	_, ts1 := startServer(t, nil)
	_, ts2 := startServer(t, nil)
	_, a, _ := post(t, ts1, "/v1/completions", body, nil)
	_, b, _ := post(t, ts2, "/v1/completions", body, nil)
	if !bytes.Equal(a, b) {
		t.Errorf("two servers with one seed streamed differently:\n%s\n%s", a, b)
	}
	_, ts3 := startServer(t, func(c *Config) { c.Seed = 8 })
	_, c, _ := post(t, ts3, "/v1/completions", body, nil)
	if bytes.Equal(a, c) {
		t.Errorf("seeds 7 and 8 streamed the same bytes")
	}

	seeded := `{` + cmplPrompt + `,"max_tokens":12,"seed":99}`
	_, d, _ := post(t, ts1, "/v1/completions", seeded, nil)
	_, e, _ := post(t, ts3, "/v1/completions", seeded, nil)
	if textOf(t, d) != textOf(t, e) {
		t.Errorf("request seed 99 gave different text on two servers: %q vs %q", textOf(t, d), textOf(t, e))
	}
}

func textOf(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := jsonUnmarshal(body, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("not a completions response: %v: %s", err, body)
	}
	return r.Choices[0].Text
}

// flat selects the error shape of vLLM up to 0.10.0.
func flat(c *Config) { c.ErrorFormat = "flat" }
