package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// alphabet is the letters a distinct prefix is made of, unless the server counts some of them
// differently (see prefixLetters).
const alphabet = "abcdefghijklmnopqrstuvwxyz"

// minLetters is the fewest letters that make enough distinct prefixes: minLetters^prefixWords
// is above experiment.MaxRequests.
const minLetters = 11

// promptSet is the prompts prepared for one server: each synthesised prompt by its key, how it
// was built, and the letters of each route's distinct prefixes.
type promptSet struct {
	text    map[promptKey]string
	built   map[promptKey]string
	letters map[string]string // by route; alphabet when not set
	// short says why a length cannot be built: it is below what the server bills for its
	// shortest prompt. Only the configs that ask for it fail; the server's others run.
	short map[promptKey]string
}

// tooShort returns why config c's prompt could not be built because its prompt_tokens is
// below the server's floor, or "" when it was built or is written out.
func (ps *promptSet) tooShort(c experiment.Config) string {
	if ps == nil || c.Request.PromptTokens <= 0 {
		return ""
	}
	return ps.short[keyOf(c)]
}

// floorMessage says that n tokens on route api are fewer than floor, what the server bills
// for its shortest prompt.
func floorMessage(api string, n, floor int) string {
	what := "one word with the special tokens or template it adds"
	if api == string(openai.Chat) {
		what = "one word inside its chat template"
	}
	return fmt.Sprintf("prompt_tokens %d is below the %d tokens this server bills for its shortest prompt, %s: ask for at least %d",
		n, floor, what, floor)
}

// prompt returns the synthesised prompt of key k.
func (ps *promptSet) prompt(k promptKey) string {
	if ps == nil {
		return ""
	}
	return ps.text[k]
}

// builtBy returns how the prompt of config c was made to its length; "" for a config whose
// prompt is written out.
func (ps *promptSet) builtBy(c experiment.Config) string {
	if ps == nil || c.Request.PromptTokens <= 0 {
		return ""
	}
	return ps.built[keyOf(c)]
}

// prefix returns request i's distinct prefix of config c's load point.
func (ps *promptSet) prefix(c experiment.Config, i int) string {
	letters := alphabet
	if ps != nil && ps.letters[c.Request.API] != "" {
		letters = ps.letters[c.Request.API]
	}
	return distinctPrefix(letters, c.Load.Seed, c.ID, i)
}

// preparePrompts synthesises a prompt of exactly N tokens for every prompt_tokens value of the
// group's configs, N counted as the server bills the prompt in usage.prompt_tokens: a
// completions prompt with its special tokens (BOS), a chat prompt as one user message inside
// the chat template with the generation prompt, and any template the server applies to a
// completions prompt too (ollama does). The counter is, best first:
//
//   - the server's /tokenize (server is true), for chat the first way chatCounter finds;
//   - the server's own usage.prompt_tokens, asked with a one-token request per count
//     (calibrated), where the server has no /tokenize or its /tokenize cannot count a chat
//     prompt: the probes run here, before any request is sent, and no row records them;
//   - tiktoken, an approximation that the records show next to the prompt tokens the server
//     reports, when the server answers neither.
//
// A prompt_tokens value below the server's floor (its fixed overhead: one word already counts
// more) cannot be built: it is kept in the set's short, and only the configs that ask for it
// fail (record.ErrPromptTooShort). Load points with distinct prompts get the letters
// of their prefixes chosen so that every prefix counts the same (prefixLetters).
func preparePrompts(ctx context.Context, g group, api *openai.Client, model string, tk *tokens.Tiktoken, server bool) (*promptSet, error) {
	ps := &promptSet{text: map[promptKey]string{}, built: map[promptKey]string{}, letters: map[string]string{},
		short: map[promptKey]string{}}
	timeout := probeTimeout(g)
	counters := map[string]tokens.Counter{} // by route, chosen once
	for _, c := range g.configs {
		k := keyOf(c)
		if k.n <= 0 {
			continue
		}
		if _, ok := ps.text[k]; ok {
			continue
		}
		if _, ok := ps.short[k]; ok {
			continue
		}
		counter := counters[k.api]
		if counter == nil {
			switch {
			case server && k.api == string(openai.Chat):
				counter = chatCounter(ctx, api, model, tk, timeout)
			case server:
				counter = completionsCounter(api, model)
			default:
				counter = calibratedCounter(ctx, openai.API(k.api), api, model, tk, timeout)
			}
			counters[k.api] = counter
		}
		if k.distinct {
			letters, ok := ps.letters[k.api]
			if !ok {
				var err error
				if letters, err = prefixLetters(ctx, counter); err != nil {
					return nil, fmt.Errorf("config %s: the letters of distinct prefixes by %s: %w", c.Label, counter.Name(), err)
				}
				ps.letters[k.api] = letters
			}
			counter = prefixed{counter, distinctPrefix(letters, 0, "", 0)}
		}
		text, _, err := tokens.Synthesize(ctx, counter, k.n, 0)
		if fe := (*tokens.FloorError)(nil); errors.As(err, &fe) {
			ps.short[k] = floorMessage(k.api, k.n, fe.Floor)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("config %s: a prompt of %d tokens by %s: %w", c.Label, k.n, counter.Name(), err)
		}
		ps.text[k] = text
		ps.built[k] = builtLabel(counter)
	}
	return ps, nil
}

// promptLengths returns how many prompts preparePrompts builds for g: one per distinct route,
// length and prefix choice of its configs that ask for a prompt length.
func promptLengths(g group) int {
	seen := map[promptKey]bool{}
	for _, c := range g.configs {
		if k := keyOf(c); k.n > 0 {
			seen[k] = true
		}
	}
	return len(seen)
}

// builtLabel is how a prompt made by counter c is described in the records.
func builtLabel(c tokens.Counter) string {
	if p, ok := c.(prefixed); ok {
		c = p.Counter
	}
	if _, ok := c.(*tokens.Tiktoken); ok {
		return c.Name() + " (approximation)"
	}
	return c.Name()
}

// probeTimeout bounds one probe of a calibration: the longest request timeout of the group's
// configs, since a probe is a request for one token with a prompt as long as theirs.
func probeTimeout(g group) time.Duration {
	d := 2 * time.Minute
	for _, c := range g.configs {
		d = max(d, c.Timeouts.Request)
	}
	return d
}

// calibrated is the name of a counter that asks the server's usage.prompt_tokens.
const calibrated = "calibrated on usage.prompt_tokens"

// calibratedCounter returns the counter of prompts on route api by the server's own count: a
// non-streamed request for one token per count, whose usage.prompt_tokens is the count, with
// every count remembered so that no text is sent twice. A server that cannot answer a first
// probe (no usage, an error) gets tiktoken, the documented approximation; once a probe worked,
// a failing one is an error of the calibration.
func calibratedCounter(ctx context.Context, route openai.API, api *openai.Client, model string, tk *tokens.Tiktoken, timeout time.Duration) tokens.Counter {
	c := tokens.NewMemo(&tokens.Server{
		Label: calibrated,
		Tokenize: func(ctx context.Context, text string) (int, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return api.PromptTokens(ctx, route, model, text)
		},
	})
	if n, err := c.Count(ctx, chatProbe); err != nil || n <= 0 {
		return tk
	}
	return c
}

// prefixLetters returns the letters of the alphabet that counter counts alike in a distinct
// prefix: a prefix of one letter repeated prefixWords times, before a fixed word, is counted
// for each letter, and the letters of the most common count are kept. A tokenizer that has a
// token for " b" but none for " x" (the tiny model's, whose words begin with no x) would
// otherwise make some prompts a token longer than others. tiktoken, an approximation, is not
// asked: every letter is kept.
func prefixLetters(ctx context.Context, counter tokens.Counter) (string, error) {
	if _, ok := counter.(*tokens.Tiktoken); ok {
		return alphabet, nil
	}
	counts := make([]int, len(alphabet))
	freq := map[int]int{}
	for i := range alphabet {
		letter := alphabet[i : i+1]
		n, err := counter.Count(ctx, strings.TrimSpace(strings.Repeat(letter+" ", prefixWords))+" "+chatProbe)
		if err != nil {
			return "", err
		}
		counts[i] = n
		freq[n]++
	}
	common := counts[0]
	for _, n := range counts {
		if freq[n] > freq[common] {
			common = n
		}
	}
	var b strings.Builder
	for i, n := range counts {
		if n == common {
			b.WriteByte(alphabet[i])
		}
	}
	if b.Len() < minLetters {
		return "", fmt.Errorf("only %d letters (%s) count alike, %d tokens in a prefix of %d: too few for distinct prefixes", b.Len(), b.String(), common, prefixWords)
	}
	return b.String(), nil
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
//  3. the server's usage.prompt_tokens, one request per count (calibratedCounter), when
//     /tokenize counts no bare text; tiktoken, the documented approximation, when the server
//     bills no prompt either.
//
// The probes are bounded in time; the counter's name says which way was chosen.
func chatCounter(ctx context.Context, api *openai.Client, model string, tk *tokens.Tiktoken, timeout time.Duration) tokens.Counter {
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
		return calibratedCounter(ctx, openai.Chat, api, model, tk, timeout)
	}
	billed, err := api.ChatPromptTokens(pctx, model, chatProbe)
	if err != nil || billed < probe {
		return calibratedCounter(ctx, openai.Chat, api, model, tk, timeout)
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
