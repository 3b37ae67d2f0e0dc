package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixedNow is the wall clock of deterministic tests.
func fixedNow() time.Time { return time.Unix(1767225600, 0) } // 2026-01-01T00:00:00Z

// testConfig is a deterministic, zero-latency configuration.
func testConfig() Config {
	c := DefaultConfig()
	c.Model = "sim/golden"
	c.Seed = 7
	c.Now = fixedNow
	c.PID = 4242
	return c
}

// lockedBuffer collects log output from concurrent handlers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts a simulated server with testConfig changed by mutate.
func startServer(t testing.TB, mutate func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	c := testConfig()
	if mutate != nil {
		mutate(&c)
	}
	s, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return s, ts
}

// post sends body to path and returns the response with its whole body; err is the error of
// reading the body, if any.
func post(t testing.TB, ts *httptest.Server, path, body string, header map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func get(t testing.TB, ts *httptest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp, b
}

// dataEvents returns the payloads of the "data: " lines of an SSE body, in order.
func dataEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		p, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q does not start with \"data: \"", line)
		}
		out = append(out, p)
	}
	return out
}

// chunk is the part of a streamed chunk the tests read.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
		TokenIDs     []int   `json:"token_ids"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	PromptTokenIDs []int  `json:"prompt_token_ids"`
	Sim            *stamp `json:"sim"`
	Error          any    `json:"error"`
}

func (c chunk) text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	if c.Choices[0].Text != nil {
		return *c.Choices[0].Text
	}
	if c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil {
		return *c.Choices[0].Delta.Content
	}
	return ""
}

// chunks parses every data event but [DONE]; done reports whether [DONE] ended the stream.
func chunks(t testing.TB, body []byte) (out []chunk, done bool) {
	t.Helper()
	evs := dataEvents(t, body)
	for i, e := range evs {
		if e == "[DONE]" {
			if i != len(evs)-1 {
				t.Fatalf("[DONE] is event %d of %d", i, len(evs))
			}
			return out, true
		}
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, e)
		}
		out = append(out, c)
	}
	return out, false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
