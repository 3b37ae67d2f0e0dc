package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/tokens"
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

// fakeTokenizer answers /tokenize and non-streamed chat the way the servers the runner meets
// do, counting one token per space-separated word. A chat template adds 5 tokens around the
// message and the generation prompt; a completions prompt gets one BOS token when
// add_special_tokens is true (both servers' default).
type fakeTokenizer struct {
	messages bool // /tokenize takes messages (vLLM); otherwise only prompt (SGLang)
	chat     bool // /v1/chat/completions answers
	chats    int  // chat requests received
}

func (f *fakeTokenizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Prompt           *string `json:"prompt"`
		Messages         []struct{ Content string }
		AddSpecialTokens *bool `json:"add_special_tokens"`
		MaxTokens        int   `json:"max_tokens"`
	}
	json.NewDecoder(r.Body).Decode(&in)
	words := func(s string) int { return len(strings.Fields(s)) }
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/tokenize":
		var n int
		switch {
		case len(in.Messages) > 0 && f.messages:
			n = words(in.Messages[0].Content) + 5
		case in.Prompt == nil:
			// SGLang's TokenizeRequest requires prompt (serving_tokenize.py, v0.5): a body with
			// only messages fails validation, which its server answers with 400.
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]","type":"BadRequestError","param":null,"code":400}`)
			return
		default:
			n = words(*in.Prompt)
			if in.AddSpecialTokens == nil || *in.AddSpecialTokens {
				n++
			}
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "7"
		}
		// SGLang reports its tokenizer's model_max_length: int(1e30) for a model without one.
		fmt.Fprintf(w, `{"tokens":[%s],"count":%d,"max_model_len":1000000000000000019884624838656}`, strings.Join(ids, ","), n)
	case "/v1/chat/completions":
		f.chats++
		if !f.chat || in.MaxTokens != 1 {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`,
			words(in.Messages[0].Content)+5, words(in.Messages[0].Content)+6)
	default:
		http.NotFound(w, r)
	}
}

// TestPreparePromptsChat checks that a chat config with prompt_tokens gets a prompt of exactly
// that many billed tokens from a server whose /tokenize takes messages (vLLM), from one whose
// /tokenize takes only prompt (SGLang: the bare count plus the chat template's overhead,
// measured once with a one-token chat request), and falls back to tiktoken, without failing,
// when neither way answers.
func TestPreparePromptsChat(t *testing.T) {
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(api string, n int) experiment.Config {
		return experiment.Config{Label: api, Request: experiment.Request{API: api, PromptTokens: n}}
	}
	g := group{configs: []experiment.Config{cfg("chat", 40), cfg("chat", 60), cfg("completions", 40)}}
	for _, tc := range []struct {
		name      string
		fake      fakeTokenizer
		wantChats int  // chat requests: the overhead probe, and a calibration's first probe
		billed    bool // the chat prompt has exactly N tokens as the fake server bills it
	}{
		{"vllm messages", fakeTokenizer{messages: true, chat: true}, 0, true},
		{"sglang prompt only", fakeTokenizer{chat: true}, 1, true},
		// The overhead probe fails, and so does the probe of a calibration on usage.
		{"neither", fakeTokenizer{}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			ts := httptest.NewServer(&f)
			defer ts.Close()
			api := &openai.Client{BaseURL: ts.URL}
			out, err := preparePrompts(context.Background(), g, api, "m", tk, true)
			if err != nil {
				t.Fatalf("preparePrompts: %v", err)
			}
			if f.chats != tc.wantChats {
				t.Errorf("%d chat requests, want %d", f.chats, tc.wantChats)
			}
			for _, n := range []int{40, 60} {
				text := out.text[promptKey{api: "chat", n: n}]
				if text == "" {
					t.Fatalf("no chat prompt of %d tokens", n)
				}
				if got := len(strings.Fields(text)) + 5; tc.billed && got != n {
					t.Errorf("chat prompt of %d tokens is billed %d", n, got)
				}
			}
			if got := len(strings.Fields(out.text[promptKey{api: "completions", n: 40}])) + 1; got != 40 {
				t.Errorf("completions prompt of 40 tokens is billed %d", got)
			}
		})
	}
}

// TestWithResetFields checks that the fields a reset needs (llama-server's "cache_prompt":
// false) reach the request body, and that the experiment's own request.extra wins.
func TestWithResetFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extra  map[string]any
		fields map[string]any
		want   string
	}{
		{"no fields", map[string]any{"top_k": 1}, nil, `"top_k":1`},
		{"llama-server", nil, map[string]any{"cache_prompt": false}, `"cache_prompt":false`},
		{"experiment wins", map[string]any{"cache_prompt": true}, map[string]any{"cache_prompt": false}, `"cache_prompt":true`},
	} {
		p := withResetFields(openai.Params{API: openai.Chat, Prompt: "hi", Extra: tc.extra}, tc.fields)
		b, err := openai.Body(p)
		if err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: body %s (%v), want %s", tc.name, b, err, tc.want)
		}
	}
}

// templated is a server without /tokenize that bills every prompt with a template around it,
// as ollama does: usage.prompt_tokens is overhead plus one token per word, two for the words
// "x" and "z" (a vocabulary with no token for " x"). It counts the probes it answers; after
// failAfter of them (when set) it answers 500, and with shuffle it counts words at random.
type templated struct {
	overhead  int
	failAfter int
	shuffle   bool
	probes    int
}

func (f *templated) count(text string) int {
	n := f.overhead
	for _, w := range strings.Fields(text) {
		n++
		if w == "x" || w == "z" {
			n++
		}
	}
	if f.shuffle {
		n = f.overhead + (n*7919)%97
	}
	return n
}

func (f *templated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Prompt    string
		Messages  []struct{ Content string }
		MaxTokens int `json:"max_tokens"`
	}
	json.NewDecoder(r.Body).Decode(&in)
	if r.URL.Path != "/v1/completions" && r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	f.probes++
	if in.MaxTokens != 1 || (f.failAfter > 0 && f.probes > f.failAfter) {
		http.Error(w, `{"error":"busy"}`, http.StatusInternalServerError)
		return
	}
	text := in.Prompt
	if len(in.Messages) > 0 {
		text = in.Messages[0].Content
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, f.count(text), f.count(text)+1)
}

// TestPreparePromptsCalibrated checks the calibration on a server without /tokenize whose
// count includes a template: every prompt, distinct prefixes included, is billed exactly N
// tokens; it takes few probes; a prompt below the template's floor is not built, and says why,
// while the server's other lengths are; and a server that fails part way, and one whose counts
// are not monotone, each give an error that says so.
func TestPreparePromptsCalibrated(t *testing.T) {
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(api string, n int, load bool) experiment.Config {
		c := experiment.Config{ID: fmt.Sprintf("%s-%d", api, n), Label: fmt.Sprintf("%s,prompt_tokens=%d", api, n),
			Request: experiment.Request{API: api, PromptTokens: n}}
		if load {
			c.ID += "-load"
			c.Load = &experiment.LoadSpec{Concurrency: 4, Seed: 3}
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		fake    templated
		configs []experiment.Config
		maxPerN int    // probes per prompt, at most
		wantErr string // "" for success; else what the error says, parts separated by " | "
		// wantShort is how the reason a config's prompt was not built begins, for the one
		// config below the floor; "" when every prompt is built.
		wantShort string
	}{
		{"completions", templated{overhead: 7}, []experiment.Config{cfg("completions", 16, false), cfg("completions", 128, false), cfg("completions", 1000, false)}, 16, "", ""},
		{"chat", templated{overhead: 55}, []experiment.Config{cfg("chat", 64, false), cfg("chat", 512, false)}, 16, "", ""},
		{"distinct prefixes", templated{overhead: 7}, []experiment.Config{cfg("completions", 64, true), cfg("completions", 300, true)}, 16 + 27, "", ""},
		{"below the floor", templated{overhead: 55}, []experiment.Config{cfg("completions", 128, false), cfg("completions", 16, false)}, 16,
			"", "prompt_tokens 16 is below the 56 tokens this server bills for its shortest prompt"},
		{"fails part way", templated{overhead: 7, failAfter: 3}, []experiment.Config{cfg("completions", 128, false)}, 16,
			"config completions,prompt_tokens=128: a prompt of 128 tokens by calibrated on usage.prompt_tokens: | 500 Internal Server Error", ""},
		{"not monotone", templated{overhead: 7, shuffle: true}, []experiment.Config{cfg("completions", 50, false)}, 16, "counts are not monotone", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			ts := httptest.NewServer(&f)
			defer ts.Close()
			api := &openai.Client{BaseURL: ts.URL}
			ps, err := preparePrompts(context.Background(), group{configs: tc.configs}, api, "m", tk, false)
			if tc.wantErr != "" {
				for _, part := range strings.Split(tc.wantErr, " | ") {
					if err == nil || !strings.Contains(err.Error(), part) {
						t.Fatalf("err = %v, want one containing %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if max := 1 + tc.maxPerN*len(tc.configs); f.probes > max {
				t.Errorf("%d probes for %d prompts, want at most %d", f.probes, len(tc.configs), max)
			}
			t.Logf("%d probes for %d prompts", f.probes, len(tc.configs))
			short := 0
			for _, c := range tc.configs {
				k := keyOf(c)
				if why := ps.tooShort(c); why != "" || tc.wantShort != "" && k.n == 16 {
					short++
					if tc.wantShort == "" || !strings.HasPrefix(why, tc.wantShort) {
						t.Errorf("%s: not built because %q, want %q", c.Label, why, tc.wantShort)
					}
					continue
				}
				if got := ps.builtBy(c); got != calibrated {
					t.Errorf("%s: built by %q, want %q", c.Label, got, calibrated)
				}
				if !k.distinct {
					if got := f.count(ps.prompt(k)); got != k.n {
						t.Errorf("%s: billed %d tokens", c.Label, got)
					}
					continue
				}
				if strings.ContainsAny(ps.letters[k.api], "xz") || len(ps.letters[k.api]) != 24 {
					t.Errorf("%s: prefix letters %q, want every letter but x and z", c.Label, ps.letters[k.api])
				}
				for i := range 200 {
					if got := f.count(ps.prefix(c, i) + " " + ps.prompt(k)); got != k.n {
						t.Fatalf("%s: request %d with prefix %q is billed %d tokens", c.Label, i, ps.prefix(c, i), got)
					}
				}
			}
			if want := map[bool]int{true: 1}[tc.wantShort != ""]; short != want {
				t.Errorf("%d configs not built, want %d", short, want)
			}
		})
	}
}
