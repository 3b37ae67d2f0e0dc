package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client calls an OpenAI-compatible server's side endpoints and prepares streaming requests.
// Its methods are safe for concurrent use.
type Client struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8000"; a trailing slash is ignored.
	BaseURL string
	// HTTP sends the requests; nil means a client like http.DefaultClient that follows no
	// redirects (see NoRedirect).
	HTTP *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
}

// HTTPError is a response with a status other than 2xx.
type HTTPError struct {
	Method, URL string // the request; empty when the response carried none
	Status      int    // the HTTP status code
	Body        []byte // the start of the response body, at most MaxErrorBody bytes
	// Location is where a redirect (3xx) points, its query string redacted (see Location).
	Location string
	// StatusLine is the status as the server sent it, e.g. "404 Not Found".
	StatusLine string
}

// Redirect reports whether the answer was a redirect (3xx).
func (e *HTTPError) Redirect() bool { return e.Status >= 300 && e.Status < 400 }

// Error names the request and the status, where a redirect points, and the start of the body.
func (e *HTTPError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Redirect() {
		return s + ", a redirect to " + RedirectTarget(e.Location) + ", which the runner does not follow"
	}
	if b := strings.TrimSpace(string(e.Body)); b != "" {
		if len(b) > 300 {
			b = b[:300] + "..."
		}
		s += ": " + b
	}
	return s
}

// RedirectTarget names where a redirect points, for a message: location (as Location gives
// it), or "nowhere (no Location header)" when the answer named none.
func RedirectTarget(location string) string {
	if location == "" {
		return "nowhere (no Location header)"
	}
	return location
}

// CheckResponse returns an *HTTPError holding the start of the body (at most MaxErrorBody
// bytes) when resp's status is not 2xx, and nil otherwise. It reads the body only in the error
// case, and does not close it.
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	// Only the start is kept for the message: a longer body is no error of its own.
	body, _ := ReadBody(resp.Body, MaxErrorBody, "an error answer")
	e := &HTTPError{Status: resp.StatusCode, Body: body, Location: Location(resp), StatusLine: resp.Status}
	if resp.Request != nil {
		e.Method, e.URL = resp.Request.Method, resp.Request.URL.String()
	}
	return e
}

func (c *Client) url(path string) string {
	return strings.TrimRight(c.BaseURL, "/") + path
}

// defaultHTTP is http.DefaultClient, except that it follows no redirects.
var defaultHTTP = &http.Client{CheckRedirect: NoRedirect}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// newRequest builds a request with the client's headers. Its error is net/http's, unworded.
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path), r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	return req, nil
}

// NewStreamRequest returns the POST request for a streaming body made by Body, with
// "Accept: text/event-stream" and "Accept-Encoding: identity". The caller sends it (and times it).
func (c *Client) NewStreamRequest(ctx context.Context, api API, body []byte) (*http.Request, error) {
	path := api.Path()
	if path == "" {
		return nil, fmt.Errorf("stream request: unknown api %q (want completions or chat)", api)
	}
	req, err := c.newRequest(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", http.MethodPost, path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	// Ask for the stream uncompressed, whatever client sends it: a compressed stream is
	// buffered by the compressor and delays the events the runner times. Without the header
	// the server may choose any encoding; with it, Go's transport also leaves the body alone.
	req.Header.Set("Accept-Encoding", "identity")
	return req, nil
}

// CallStage is how far a side-endpoint call got before it failed.
type CallStage int

// The stages of a CallError.
const (
	// StageEncode: the request body could not be encoded as JSON.
	StageEncode CallStage = iota
	// StageSend: the request could not be made or sent, or no answer came.
	StageSend
	// StageStatus: the answer's status was not 2xx; Err is the *HTTPError.
	StageStatus
	// StageRead: the body of a 2xx answer could not be read whole (a *TooLargeError, or the
	// connection's error).
	StageRead
)

// CallError is a failed Call: the request, how far it got, and the error there. Its text is
// the runner's for a side endpoint ("GET /v1/models: ..."); a caller that words its
// errors otherwise (the engine package, which names the engine) takes the parts.
type CallError struct {
	Method, Path string
	Stage        CallStage
	Err          error
}

// Error names the request and what went wrong; an answer's status reads as the *HTTPError.
func (e *CallError) Error() string {
	switch e.Stage {
	case StageStatus:
		return e.Err.Error()
	case StageRead:
		return fmt.Sprintf("%s %s: reading the response: %v", e.Method, e.Path, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the error of the failed stage.
func (e *CallError) Unwrap() error { return e.Err }

// Call sends in, encoded as JSON (nil sends no body), to path and returns the body of a 2xx
// answer, which may be at most MaxMetricsBody bytes for /metrics and MaxJSONBody for
// everything else. It follows no redirect (with the default HTTP client). A failure is a
// *CallError.
func (c *Client) Call(ctx context.Context, method, path string, in any) ([]byte, error) {
	fail := func(stage CallStage, err error) error {
		return &CallError{Method: method, Path: path, Stage: stage, Err: err}
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fail(StageEncode, err)
		}
	}
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, fail(StageSend, err)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fail(StageSend, err)
	}
	defer resp.Body.Close()
	if err := CheckResponse(resp); err != nil {
		return nil, fail(StageStatus, err)
	}
	limit := int64(MaxJSONBody)
	if path == "/metrics" {
		limit = MaxMetricsBody
	}
	out, err := ReadBody(resp.Body, limit, fmt.Sprintf("the %s %s answer", method, path))
	if err != nil {
		return nil, fail(StageRead, err)
	}
	return out, nil
}

// probeDrain is how much of a probe's answer is read, only so that its connection can be
// reused; the rest is dropped with the connection.
const probeDrain = 1 << 20

// Probe sends GET path and returns the answer's status and, for a redirect, where it points
// (see Location); it follows no redirect (with the default HTTP client). It is a readiness
// check: the body is not kept, and its error is net/http's, unworded, for the caller to
// describe.
func (c *Client) Probe(ctx context.Context, path string) (status int, location string, err error) {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, probeDrain))
	resp.Body.Close()
	return resp.StatusCode, Location(resp), nil
}

// CloseIdleConnections closes the connections the client keeps open between requests.
func (c *Client) CloseIdleConnections() { c.httpClient().CloseIdleConnections() }

// getJSON sends a request and decodes a 2xx JSON response into out.
func (c *Client) getJSON(ctx context.Context, method, path string, in, out any) error {
	body, err := c.Call(ctx, method, path, in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decoding the response: %w: %s", method, path, err, excerpt(body))
	}
	return nil
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TokenizeRequest is the body of vLLM's POST /tokenize: either Prompt, or Messages (then the
// server applies the model's chat template).
type TokenizeRequest struct {
	Model    string    `json:"model,omitempty"`
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// AddSpecialTokens says whether the tokenizer adds its special tokens (a BOS token, for
	// most models). vLLM's default is true for a prompt, which is how a /v1/completions
	// prompt is counted in usage.prompt_tokens.
	AddSpecialTokens *bool `json:"add_special_tokens,omitempty"`
	// AddGenerationPrompt applies to Messages: whether the template's assistant header is
	// appended, as it is for a chat request.
	AddGenerationPrompt *bool `json:"add_generation_prompt,omitempty"`
}

// TokenizeResult is the answer of POST /tokenize.
type TokenizeResult struct {
	Count       int   // number of tokens
	MaxModelLen int   // the model's context length; 0 when not reported
	Tokens      []int // the token ids
}

// Tokenize calls POST /tokenize.
func (c *Client) Tokenize(ctx context.Context, req TokenizeRequest) (TokenizeResult, error) {
	var out struct {
		Count       *int        `json:"count"`
		MaxModelLen json.Number `json:"max_model_len"`
		Tokens      []int       `json:"tokens"`
	}
	if err := c.getJSON(ctx, http.MethodPost, "/tokenize", req, &out); err != nil {
		return TokenizeResult{}, err
	}
	r := TokenizeResult{MaxModelLen: contextLength(out.MaxModelLen), Tokens: out.Tokens, Count: len(out.Tokens)}
	if out.Count != nil {
		r.Count = *out.Count
	} else if out.Tokens == nil {
		return TokenizeResult{}, fmt.Errorf("POST /tokenize: the response has neither count nor tokens")
	}
	return r, nil
}

// maxContextLength is the largest context length taken as a real limit: 2^31-1 tokens. Above
// it a server means "no limit".
const maxContextLength = 1<<31 - 1

// contextLength reads a max_model_len as a server sends it: any JSON number. SGLang's /tokenize
// (python/sglang/srt/entrypoints/openai/serving_tokenize.py, v0.4.7 to v0.5.x) sends its
// tokenizer's model_max_length, which transformers sets to int(1e30) when the model names no
// limit. A number that is no positive whole count up to maxContextLength (or no number at all)
// reads as 0, "not reported", so that the answer is never refused for it.
func contextLength(n json.Number) int {
	if n == "" {
		return 0
	}
	if i, err := n.Int64(); err == nil {
		if i > 0 && i <= maxContextLength {
			return int(i)
		}
		return 0
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || f > maxContextLength || f != float64(int64(f)) {
		return 0
	}
	return int(f)
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID   string // the name to send as "model"
	Root string // the model it serves, when the server says (vLLM); may differ from ID
	// MaxModelLen is the context length, when the server says (vLLM since mid-2024); 0 when not.
	MaxModelLen int
}

// Models calls GET /v1/models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	body, err := c.Call(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	models, err := ParseModels(body)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models: decoding the response: %w: %s", err, excerpt(body))
	}
	return models, nil
}

// ParseModels reads the entries of an OpenAI model list, the answer of GET /v1/models. An
// entry's id may be empty: the list is as the server wrote it.
func ParseModels(b []byte) ([]Model, error) {
	var out struct {
		Data []struct {
			ID          string      `json:"id"`
			Root        string      `json:"root"`
			MaxModelLen json.Number `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	models := make([]Model, 0, len(out.Data))
	for _, d := range out.Data {
		models = append(models, Model{ID: d.ID, Root: d.Root, MaxModelLen: contextLength(d.MaxModelLen)})
	}
	return models, nil
}

// Version calls GET /version (vLLM: {"version": "0.6.3"}) and returns the version string, as
// ParseVersion reads it.
func (c *Client) Version(ctx context.Context) (string, error) {
	body, err := c.Call(ctx, http.MethodGet, "/version", nil)
	if err != nil {
		return "", err
	}
	v := ParseVersion(body)
	if v == "" {
		return "", fmt.Errorf("GET /version: the response has no version")
	}
	return v, nil
}

// ParseVersion reads an engine's version from the JSON object a version endpoint answers: its
// "version" string (vLLM's /version, SGLang's /server_info, ollama's /api/version), else its
// "build_info" string (llama-server's /props); "" when b has neither, or is no JSON object.
func ParseVersion(b []byte) string {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	for _, k := range []string{"version", "build_info"} {
		if s, ok := v[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Health calls GET /health: nil when the server answers 2xx (vLLM: 200 with an empty body),
// an *HTTPError otherwise (vLLM: 503 when the engine is dead), or the connection error.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.Call(ctx, http.MethodGet, "/health", nil)
	return err
}

// ResetPrefixCache calls POST /reset_prefix_cache. vLLM serves it only with
// VLLM_SERVER_DEV_MODE=1; otherwise the answer is an *HTTPError with status 404.
func (c *Client) ResetPrefixCache(ctx context.Context) error {
	_, err := c.Call(ctx, http.MethodPost, "/reset_prefix_cache", nil)
	return err
}

// Metrics calls GET /metrics and parses the Prometheus text.
func (c *Client) Metrics(ctx context.Context) (*Metrics, error) {
	body, err := c.Call(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	m, err := ParseMetrics(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	return m, nil
}

// ChatPromptTokens sends text as one user message in a non-streamed chat request for one token
// and returns usage.prompt_tokens: the prompt as the server bills a chat request, its chat
// template included. It is how the runner learns the template's overhead from a server whose
// /tokenize takes no messages (SGLang, whose TokenizeRequest has only prompt).
func (c *Client) ChatPromptTokens(ctx context.Context, model, text string) (int, error) {
	return c.PromptTokens(ctx, Chat, model, text)
}

// PromptTokens sends text as the prompt of a non-streamed request for one token on api (a
// /v1/completions prompt, or one user message of a chat request) and returns
// usage.prompt_tokens: the prompt as the server bills it, with whatever template and special
// tokens the server adds (ollama applies the model's chat template to a completions prompt
// too). It is how a prompt is made to an exact length on a server without /tokenize. A count
// of 0 for a non-empty text is an error: ollama reports a zeroed usage where it has none.
func (c *Client) PromptTokens(ctx context.Context, api API, model, text string) (int, error) {
	in := map[string]any{"max_tokens": 1, "stream": false}
	if api == Chat {
		in["messages"] = []Message{{Role: "user", Content: text}}
	} else {
		in["prompt"] = text
	}
	if model != "" {
		in["model"] = model
	}
	var out struct {
		Usage *struct {
			PromptTokens *int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := c.getJSON(ctx, http.MethodPost, api.Path(), in, &out); err != nil {
		return 0, err
	}
	if out.Usage == nil || out.Usage.PromptTokens == nil {
		return 0, fmt.Errorf("POST %s: the response has no usage.prompt_tokens", api.Path())
	}
	if *out.Usage.PromptTokens <= 0 && text != "" {
		return 0, fmt.Errorf("POST %s: usage.prompt_tokens is %d for a prompt of %d bytes", api.Path(), *out.Usage.PromptTokens, len(text))
	}
	return *out.Usage.PromptTokens, nil
}
