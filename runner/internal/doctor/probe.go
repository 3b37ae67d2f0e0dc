package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// probe holds what the checks of one ready server share: the server, its configs, and the
// client of its side endpoints.
type probe struct {
	srv *engine.Server
	g   group
	api *openai.Client
}

func newProbe(srv *engine.Server, g group) *probe {
	return &probe{srv: srv, g: g, api: &openai.Client{BaseURL: srv.BaseURL(), APIKey: srv.APIKey()}}
}

// version checks that the server said which version it is, as Start asked it.
func (p *probe) version() Check {
	if v := p.srv.Version(); v != "" {
		return Check{Name: "version", Result: OK, Detail: v}
	}
	return Check{Name: "version", Result: Missing, Detail: "the server answered no version",
		Without: "servers.csv records no engine_version, so runner diff cannot tell two versions apart"}
}

// sideTimeout bounds one side request of a check.
const sideTimeout = 30 * time.Second

// maxModelLen compares the context length the server reports (GET /v1/models, else /tokenize)
// with the experiment's server.max_model_len. A server that reports another length than the
// experiment asked for did not take the setting: the prompts the experiment checked against it
// may not fit.
func (p *probe) maxModelLen(ctx context.Context) Check {
	c := Check{Name: "max_model_len"}
	reported, source := 0, ""
	ctx, cancel := context.WithTimeout(ctx, sideTimeout)
	defer cancel()
	if models, err := p.api.Models(ctx); err == nil {
		for _, m := range models {
			if m.MaxModelLen > 0 && (reported == 0 || m.ID == p.srv.Model()) {
				reported, source = m.MaxModelLen, "GET /v1/models"
			}
		}
	}
	if reported == 0 {
		if r, err := p.api.Tokenize(ctx, openai.TokenizeRequest{Model: p.srv.Model(), Prompt: "hello"}); err == nil && r.MaxModelLen > 0 {
			reported, source = r.MaxModelLen, "POST /tokenize"
		}
	}
	want := p.g.server.MaxModelLen
	switch {
	case reported == 0:
		c.Result, c.Detail = Missing, "the server reports no context length (neither GET /v1/models nor POST /tokenize)"
		if want > 0 {
			c.Detail += fmt.Sprintf("; the experiment says %d", want)
		}
		c.Without = "a prompt longer than the context is found only when the server refuses it"
	case want > 0 && reported != want:
		c.Result = Failed
		c.Detail = fmt.Sprintf("the server reports %d (%s), the experiment says %d", reported, source, want)
		c.Without = fmt.Sprintf("requests are checked against %d tokens but served within %d: a longer one fails", want, reported)
	case want > 0:
		c.Result, c.Detail = OK, fmt.Sprintf("%d (%s), as the experiment says", reported, source)
	default:
		c.Result, c.Detail = OK, fmt.Sprintf("%d (%s); the experiment sets none", reported, source)
	}
	return c
}

// tokenize tries POST /tokenize in each form the runner sends, and the usage.prompt_tokens of a
// one-token request that stands in for it: a completions prompt with special tokens (prompts
// of prompt_tokens), a bare prompt without them (the output counts), chat messages with the
// generation prompt (chat prompts of prompt_tokens).
func (p *probe) tokenize(ctx context.Context) []Check {
	yes, no := true, false
	model := p.srv.Model()
	forms := []struct {
		name, without string
		req           openai.TokenizeRequest
	}{
		{"tokenize prompt", "prompts of prompt_tokens are made to length by usage.prompt_tokens, one request per count (or tiktoken, an approximation, without usage)",
			openai.TokenizeRequest{Model: model, Prompt: "hello", AddSpecialTokens: &yes}},
		{"tokenize bare text", "output tokens are counted from the stream alone (tiktoken as the last resort), with no cross-check by the model's tokenizer",
			openai.TokenizeRequest{Model: model, Prompt: "hello", AddSpecialTokens: &no}},
		{"tokenize messages", "chat prompts of prompt_tokens are counted as the bare text plus the chat template's overhead, measured once (or by usage.prompt_tokens)",
			openai.TokenizeRequest{Model: model, Messages: []openai.Message{{Role: "user", Content: "hello"}}, AddGenerationPrompt: &yes}},
	}
	var out []Check
	for _, f := range forms {
		c := Check{Name: f.name}
		tctx, cancel := context.WithTimeout(ctx, sideTimeout)
		r, err := p.api.Tokenize(tctx, f.req)
		cancel()
		switch {
		case err != nil:
			c.Result, c.Detail, c.Without = Missing, err.Error(), f.without
		case r.Count <= 0:
			c.Result, c.Detail, c.Without = Missing, "the server counted 0 tokens for \"hello\"", f.without
		default:
			c.Result, c.Detail = OK, tabular.Plural(r.Count, "token")+` for "hello"`
		}
		out = append(out, c)
	}
	c := Check{Name: "usage.prompt_tokens"}
	tctx, cancel := context.WithTimeout(ctx, sideTimeout)
	defer cancel()
	n, err := p.api.PromptTokens(tctx, p.route(), model, "hello")
	if err != nil {
		c.Result, c.Detail = Missing, err.Error()
		c.Without = "without /tokenize either, prompts of prompt_tokens are approximated by tiktoken and the reported prompt_tokens stay empty"
	} else {
		c.Result, c.Detail = OK, fmt.Sprintf("%s billed for \"hello\" on %s", tabular.Plural(n, "token"), p.route().Path())
	}
	return append(out, c)
}

// route is the API of the server's first config: the route the checks send their requests on.
func (p *probe) route() openai.API {
	if api := p.g.configs[0].Request.API; api != "" {
		return openai.API(api)
	}
	return openai.Completions
}
