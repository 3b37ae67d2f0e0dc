package orchestrate

import (
	"context"
	"fmt"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// promptKey names one synthesised prompt: its route (a chat template adds tokens) and length.
type promptKey struct {
	api string
	n   int
}

// serverTokenizes reports whether the server answers /tokenize, which makes its own tokenizer
// the one that synthesises prompts and counts output text. A server must count the probe's word
// as at least one token: llama.cpp's /tokenize, which reads "content" rather than "prompt",
// answers 200 with no tokens, and would count every text as 0.
func serverTokenizes(ctx context.Context, api *openai.Client, model string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	no := false
	r, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: model, Prompt: "hello", AddSpecialTokens: &no})
	return err == nil && r.Count > 0
}

// preparePrompts synthesises a prompt of exactly N tokens for every prompt_tokens value of the
// group's configs. With a server that tokenizes, N is counted as the server bills the prompt in
// usage.prompt_tokens: a completions prompt with its special tokens (BOS), a chat prompt as one
// user message inside the chat template with the generation prompt. Without one, tiktoken counts
// the text, an approximation that the records show next to the prompt tokens the server reports.
func preparePrompts(ctx context.Context, g group, api *openai.Client, model string, tk *tokens.Tiktoken, server bool) (map[promptKey]string, error) {
	out := map[promptKey]string{}
	for _, c := range g.configs {
		k := promptKey{api: c.Request.API, n: c.Request.PromptTokens}
		if k.n <= 0 {
			continue
		}
		if _, ok := out[k]; ok {
			continue
		}
		var counter tokens.Counter = tk
		if server {
			counter = serverCounter(api, model, k.api)
		}
		text, _, err := tokens.Synthesize(ctx, counter, k.n, 0)
		if err != nil {
			return nil, fmt.Errorf("config %s: a prompt of %d tokens by %s: %w", c.Label, k.n, counter.Name(), err)
		}
		out[k] = text
	}
	return out, nil
}

// serverCounter counts with the server's /tokenize as the server counts a prompt of the route.
func serverCounter(api *openai.Client, model, route string) tokens.Counter {
	yes := true
	return &tokens.Server{
		Label: "server /tokenize",
		Tokenize: func(ctx context.Context, text string) (int, error) {
			req := openai.TokenizeRequest{Model: model, Prompt: text, AddSpecialTokens: &yes}
			if route == string(openai.Chat) {
				req = openai.TokenizeRequest{Model: model, Messages: []openai.Message{{Role: "user", Content: text}},
					AddGenerationPrompt: &yes}
			}
			r, err := api.Tokenize(ctx, req)
			return r.Count, err
		},
	}
}
