package orchestrate

import (
	"context"
	"fmt"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// promptKey names one synthesised prompt: its route (a chat template adds tokens) and length.
type promptKey struct {
	api string
	n   int
	// distinct: the text is the rest of a prompt that starts with a distinct prefix
	// (distinctPrefix), counted with the prefix so that the whole is n tokens.
	distinct bool
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

// chatProbe is the text the chat counters are probed with.
const chatProbe = "hello"

// preparePrompts synthesises a prompt of exactly N tokens for every prompt_tokens value of the
// group's configs. With a server that tokenizes, N is counted as the server bills the prompt in
// usage.prompt_tokens: a completions prompt with its special tokens (BOS), a chat prompt as one
// user message inside the chat template with the generation prompt. Without one, tiktoken counts
// the text, an approximation that the records show next to the prompt tokens the server reports.
// A chat prompt is counted the first way chatCounter finds that works, so that a server whose
// /tokenize takes no messages still gets its prompts, and no way fails the group.
func preparePrompts(ctx context.Context, g group, api *openai.Client, model string, tk *tokens.Tiktoken, server bool) (map[promptKey]string, error) {
	out := map[promptKey]string{}
	var chat tokens.Counter // chosen once, for the first chat config
	for _, c := range g.configs {
		k := keyOf(c)
		if k.n <= 0 {
			continue
		}
		if _, ok := out[k]; ok {
			continue
		}
		var counter tokens.Counter = tk
		switch {
		case server && k.api == string(openai.Chat):
			if chat == nil {
				chat = chatCounter(ctx, api, model, tk)
			}
			counter = chat
		case server:
			counter = completionsCounter(api, model)
		}
		if k.distinct {
			counter = prefixed{counter, distinctPrefix(0, "", 0)}
		}
		text, _, err := tokens.Synthesize(ctx, counter, k.n, 0)
		if err != nil {
			return nil, fmt.Errorf("config %s: a prompt of %d tokens by %s: %w", c.Label, k.n, counter.Name(), err)
		}
		out[k] = text
	}
	return out, nil
}

// keyOf returns the key of the prompt a config sends.
func keyOf(c experiment.Config) promptKey {
	return promptKey{api: c.Request.API, n: c.Request.PromptTokens, distinct: distinctPrompts(c)}
}

// prefixed counts a text as the rest of a prompt that starts with prefix and a space.
type prefixed struct {
	tokens.Counter
	prefix string
}

func (p prefixed) Count(ctx context.Context, text string) (int, error) {
	return p.Counter.Count(ctx, p.prefix+" "+text)
}

// completionsCounter counts with the server's /tokenize as the server counts a /v1/completions
// prompt: with its special tokens.
func completionsCounter(api *openai.Client, model string) tokens.Counter {
	yes := true
	return &tokens.Server{
		Label: "server /tokenize",
		Tokenize: func(ctx context.Context, text string) (int, error) {
			r, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: model, Prompt: text, AddSpecialTokens: &yes})
			return r.Count, err
		},
	}
}

// chatCounter returns the counter of chat prompts, the first of these that the server answers:
//
//  1. /tokenize with messages, which applies the chat template (vLLM: TokenizeChatRequest in
//     vllm/entrypoints/openai/protocol.py, 0.5 and later);
//  2. /tokenize of the bare text, without special tokens, plus the chat template's overhead,
//     measured once as the usage.prompt_tokens of a one-token chat request for a probe minus
//     the bare count of that probe. SGLang's /tokenize takes only prompt
//     (python/sglang/srt/entrypoints/openai/serving_tokenize.py, v0.4.7 to v0.5.x) and refuses
//     messages with 400;
//  3. tiktoken, the documented approximation, when neither works.
//
// The probes are bounded in time; the counter's name says which way was chosen.
func chatCounter(ctx context.Context, api *openai.Client, model string, tk *tokens.Tiktoken) tokens.Counter {
	yes, no := true, false
	messages := func(ctx context.Context, text string) (int, error) {
		r, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: model, Messages: []openai.Message{{Role: "user", Content: text}},
			AddGenerationPrompt: &yes})
		return r.Count, err
	}
	bare := func(ctx context.Context, text string) (int, error) {
		r, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: model, Prompt: text, AddSpecialTokens: &no})
		return r.Count, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A server that ignores messages counts an empty prompt: no count is no answer.
	if n, err := messages(pctx, chatProbe); err == nil && n > 0 {
		return &tokens.Server{Label: "server /tokenize (messages)", Tokenize: messages}
	}
	probe, err := bare(pctx, chatProbe)
	if err != nil || probe <= 0 {
		return tk
	}
	billed, err := api.ChatPromptTokens(pctx, model, chatProbe)
	if err != nil || billed < probe {
		return tk
	}
	overhead := billed - probe
	return &tokens.Server{
		Label: fmt.Sprintf("server /tokenize (prompt) + %d chat template tokens", overhead),
		Tokenize: func(ctx context.Context, text string) (int, error) {
			n, err := bare(ctx, text)
			return n + overhead, err
		},
	}
}
