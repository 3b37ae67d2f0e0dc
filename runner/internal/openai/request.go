package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
)

// API names one of the two streaming routes.
type API string

// The streaming routes.
const (
	Completions API = "completions" // POST /v1/completions, prompt text
	Chat        API = "chat"        // POST /v1/chat/completions, one user message
)

// Path returns the route's URL path, or "" for an unknown API.
func (a API) Path() string {
	switch a {
	case Completions:
		return "/v1/completions"
	case Chat:
		return "/v1/chat/completions"
	}
	return ""
}

// Options are the optional stream features a request asks for. Servers that do not know them
// either ignore them (then the stream simply lacks what they ask for, and Tally falls back) or
// reject the request (then Degrade says which to drop).
type Options struct {
	// IncludeUsage asks for a final usage chunk: stream_options.include_usage.
	IncludeUsage bool
	// ContinuousUsage asks for cumulative usage on every chunk:
	// stream_options.continuous_usage_stats (vLLM, SGLang). It implies IncludeUsage, because
	// vLLM honours it only together with include_usage.
	ContinuousUsage bool
	// ReturnTokenIDs asks for each chunk's token ids: return_token_ids (vLLM).
	ReturnTokenIDs bool
}

// Params are the fields of one streaming request.
type Params struct {
	API    API    // the route, which decides between "prompt" and "messages"
	Model  string // omitted when empty (vLLM then uses its only model)
	Prompt string // the prompt text; chat sends it as one user message

	MaxTokens   int      // omitted when 0
	IgnoreEOS   *bool    // vLLM extension; omitted when nil
	MinTokens   *int     // vLLM extension; omitted when nil
	Temperature *float64 // omitted when nil
	Seed        *int     // omitted when nil
	Stop        []string // omitted when empty

	// Extra is merged into the body last, so its values win. Objects merge key by key
	// (extra {"stream_options": {"x": 1}} keeps include_usage); any other value replaces.
	Extra map[string]any

	// Options are the optional stream features to ask for.
	Options Options
}

// Body returns the JSON body of a streaming request: "stream": true, the fields of p, and
// "stream_options" and "return_token_ids" as p.Options ask. Keys come out sorted, so equal
// params give equal bytes.
func Body(p Params) ([]byte, error) {
	body := map[string]any{"stream": true}
	switch p.API {
	case Completions:
		body["prompt"] = p.Prompt
	case Chat:
		body["messages"] = []map[string]any{{"role": "user", "content": p.Prompt}}
	default:
		return nil, fmt.Errorf("request body: unknown api %q (want completions or chat)", p.API)
	}
	if p.Model != "" {
		body["model"] = p.Model
	}
	if p.MaxTokens > 0 {
		body["max_tokens"] = p.MaxTokens
	}
	if p.IgnoreEOS != nil {
		body["ignore_eos"] = *p.IgnoreEOS
	}
	if p.MinTokens != nil {
		body["min_tokens"] = *p.MinTokens
	}
	if p.Temperature != nil {
		body["temperature"] = *p.Temperature
	}
	if p.Seed != nil {
		body["seed"] = *p.Seed
	}
	if len(p.Stop) > 0 {
		body["stop"] = p.Stop
	}
	if p.Options.IncludeUsage || p.Options.ContinuousUsage {
		so := map[string]any{"include_usage": true}
		if p.Options.ContinuousUsage {
			so["continuous_usage_stats"] = true
		}
		body["stream_options"] = so
	}
	if p.Options.ReturnTokenIDs {
		body["return_token_ids"] = true
	}
	merge(body, p.Extra)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// merge copies src into dst; where both hold an object, it merges them key by key without
// changing src's maps.
func merge(dst, src map[string]any) {
	for k, v := range src {
		sv, sok := v.(map[string]any)
		dv, dok := dst[k].(map[string]any)
		if sok && dok {
			m := maps.Clone(dv)
			merge(m, sv)
			dst[k] = m
			continue
		}
		dst[k] = v
	}
}
