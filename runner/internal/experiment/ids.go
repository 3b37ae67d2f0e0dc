package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// idLen is the number of hex characters of a config or server id.
const idLen = 12

// label names a config by the values of its point, e.g. "max_tokens=64,prompt_tokens=512", or
// "default" when it has none.
func label(cells []cell) string {
	if len(cells) == 0 {
		return "default"
	}
	parts := make([]string, len(cells))
	for i, cl := range cells {
		parts[i] = cl.f.short() + "=" + shorten(formatValue(cl.raw))
	}
	return strings.Join(parts, ",")
}

// shorten keeps long values (literal prompts) readable in labels: one line, at most n runes.
func shorten(s string) string {
	const n = 24
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// canonServer is the content of a server config that its id is computed from. Field names are
// the file's; empty fields are left out, so a field added later does not change existing ids.
type canonServer struct {
	Engine       string            `json:"engine"`
	Model        string            `json:"model,omitempty"`
	Dtype        string            `json:"dtype,omitempty"`
	MaxModelLen  int               `json:"max_model_len,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	ReadyTimeout string            `json:"ready_timeout,omitempty"`
	Host         string            `json:"host,omitempty"`
	Port         int               `json:"port,omitempty"`
	URL          string            `json:"url,omitempty"`
	APIKeyEnv    string            `json:"api_key_env,omitempty"`
	Entrypoint   string            `json:"entrypoint,omitempty"`
	Command      []string          `json:"command,omitempty"`
	ReadyPath    string            `json:"ready_path,omitempty"`
}

// canonRequest is the content of a request that a config id is computed from.
type canonRequest struct {
	API          string         `json:"api"`
	Prompt       string         `json:"prompt,omitempty"`
	PromptName   string         `json:"prompt_name,omitempty"`
	PromptTokens int            `json:"prompt_tokens,omitempty"`
	MaxTokens    int            `json:"max_tokens"`
	IgnoreEOS    *bool          `json:"ignore_eos,omitempty"`
	MinTokens    *int           `json:"min_tokens,omitempty"`
	Temperature  *float64       `json:"temperature,omitempty"`
	Seed         *int           `json:"seed,omitempty"`
	Stop         []string       `json:"stop,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// canonConfig is the whole content a config id is computed from.
type canonConfig struct {
	Server      canonServer       `json:"server"`
	Request     canonRequest      `json:"request"`
	Repetitions int               `json:"repetitions"`
	Warmup      int               `json:"warmup"`
	Cache       string            `json:"cache"`
	Timeouts    map[string]string `json:"timeouts"`
	// Load is left out for a config without a load section, so that adding loads changed no
	// existing id.
	Load *canonLoad `json:"load,omitempty"`
}

// canonLoad is the content of a load that a config id is computed from.
type canonLoad struct {
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Arrival        string  `json:"arrival,omitempty"`
	Burstiness     float64 `json:"burstiness,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	Seed           int64   `json:"seed,omitempty"`
	Prompts        string  `json:"prompts"`
}

// durationText renders a duration canonically, or "" for zero.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// ids computes the config id and the server id: the first 12 hex digits of the sha256 of their
// canonical encodings.
func ids(c *Config) (id, serverID string, err error) {
	cb, sb, err := canonical(c)
	if err != nil {
		return "", "", err
	}
	return hash(cb), hash(sb), nil
}

// canonical encodes a config's content, and its server's, as JSON. JSON encodes struct fields in
// declaration order and map keys sorted, so the bytes are the same on any machine; the file's
// path, the experiment's name and the config's position play no part.
func canonical(c *Config) (config, server []byte, err error) {
	s := c.Server
	cs := canonServer{
		Engine: s.Engine, Model: s.Model, Dtype: s.Dtype, MaxModelLen: s.MaxModelLen,
		Args: s.Args, Env: s.Env, ReadyTimeout: durationText(s.ReadyTimeout), Host: s.Host,
		Port: s.Port, URL: s.URL, APIKeyEnv: s.APIKeyEnv, Entrypoint: s.Entrypoint,
		Command: s.Command, ReadyPath: s.ReadyPath,
	}
	r := c.Request
	cc := canonConfig{
		Server: cs,
		Request: canonRequest{
			API: r.API, Prompt: r.Prompt, PromptName: r.PromptName, PromptTokens: r.PromptTokens,
			MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, MinTokens: r.MinTokens,
			Temperature: r.Temperature, Seed: r.Seed, Stop: r.Stop, Extra: r.Extra,
		},
		Repetitions: c.Repetitions,
		Warmup:      c.Warmup,
		Cache:       c.Cache,
		Timeouts:    map[string]string{"request": durationText(c.Timeouts.Request)},
	}
	if l := c.Load; l != nil {
		cc.Load = &canonLoad{Concurrency: l.Concurrency, Rate: l.Rate, Arrival: l.Arrival, Burstiness: l.Burstiness,
			MaxConcurrency: l.MaxConcurrency, Seed: l.Seed, Prompts: l.Prompts}
	}
	if server, err = json.Marshal(cs); err != nil {
		return nil, nil, fmt.Errorf("encode server config: %w", err)
	}
	if config, err = json.Marshal(cc); err != nil {
		return nil, nil, fmt.Errorf("encode config: %w", err)
	}
	return config, server, nil
}

// hash returns the first idLen hex digits of the sha256 of b.
func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:idLen]
}
