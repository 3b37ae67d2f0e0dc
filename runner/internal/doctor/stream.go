package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/measure"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// requestTimeout bounds one streamed request of a check: a cold CPU engine may take a while
// over its first.
const requestTimeout = 2 * time.Minute

// fallbackTPOT is what tpot_token divides by without per-event counts.
const fallbackTPOT = "tpot_token divides by (output tokens − 1) from the final usage or /tokenize, and tpot_token_exact is false"

// client returns a measuring client of the server that asks for every stream option the run
// asks for, as the run's does.
func (p *probe) client() *measure.Client {
	c := &measure.Client{API: p.api, HTTP: measure.NewHTTP()}
	c.SetOptions(openai.Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true})
	return c
}

// spec is a streamed request for maxTokens tokens of prompt on the server's route, with the
// request fields of its first config that decide whether the server accepts it (ignore_eos,
// temperature, seed, extra) and, where the experiment resets the cache, the fields a reset needs
// on every request.
func (p *probe) spec(prompt string, maxTokens int) measure.Spec {
	r := p.g.configs[0].Request
	params := openai.Params{API: p.route(), Model: p.srv.Model(), Prompt: prompt, MaxTokens: maxTokens,
		IgnoreEOS: r.IgnoreEOS, Temperature: r.Temperature, Seed: r.Seed, Extra: map[string]any{}}
	for k, v := range r.Extra {
		params.Extra[k] = v
	}
	if p.g.needsReset() {
		for k, v := range p.srv.CacheResetFields() {
			params.Extra[k] = v
		}
	}
	return measure.Spec{Params: params, Timeout: requestTimeout}
}

// scrape returns the server's /metrics now, or nil and why not.
func (p *probe) scrape(ctx context.Context) (*openai.Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, sideTimeout)
	defer cancel()
	return p.api.Metrics(ctx)
}

// stream sends one streamed request between two scrapes of /metrics, and checks the stream, the
// options it carried, the metric names the runner reads and the TTFT histogram's movement.
func (p *probe) stream(ctx context.Context) []Check {
	metrics := enginefacts.ServesMetrics(p.srv.Engine())
	var before *openai.Metrics
	var scrapeErr error
	if metrics {
		before, scrapeErr = p.scrape(ctx)
	}
	client := p.client()
	rec, err := client.Do(ctx, p.spec("Say hello to the runner's doctor.", 8))
	if err != nil {
		return []Check{{Name: "streaming", Result: Failed, Detail: err.Error(), Without: "every request fails"}}
	}
	out := []Check{streamed(rec)}
	if rec.Status != record.StatusOK {
		for _, name := range []string{"continuous_usage_stats", "return_token_ids", "metric names", "ttft histogram"} {
			out = append(out, Check{Name: name, Result: Skipped, Detail: "no request streams to check it with"})
		}
		return out
	}
	out = append(out, streamOptions(rec, client.Options())...)
	if !metrics {
		why := p.srv.Engine() + " serves no Prometheus /metrics"
		return append(out, Check{Name: "metric names", Result: Skipped, Detail: why, Without: "every server-side column stays empty"},
			Check{Name: "ttft histogram", Result: Skipped, Detail: why, Without: "server_ttft_ms and client_overhead_ms stay empty"})
	}
	var after *openai.Metrics
	if scrapeErr == nil {
		after, scrapeErr = p.scrape(ctx)
	}
	if scrapeErr != nil {
		return append(out, Check{Name: "metric names", Result: Missing, Detail: scrapeErr.Error(), Without: "every server-side column stays empty"})
	}
	names, ok := openai.DetectServerNames(after)
	if !ok {
		return append(out, Check{Name: "metric names", Result: Missing,
			Detail:  "GET /metrics serves none of the names of vLLM, SGLang or llama.cpp",
			Without: "every server-side column stays empty"})
	}
	return append(out, metricNames(names, after), ttftHistogram(names, before, after))
}

// streamed checks that the request streamed to its end with generated text.
func streamed(rec record.Request) Check {
	c := Check{Name: "streaming"}
	if rec.Status != record.StatusOK {
		c.Result, c.Detail, c.Without = Failed, fmt.Sprintf("the request failed (%s): %s", rec.ErrorClass, rec.Error), "every request fails"
		return c
	}
	c.Result = OK
	c.Detail = fmt.Sprintf("%d events, %d with text, ttft %s", rec.Events, rec.TextEvents, rec.TTFT.Round(time.Microsecond))
	if rec.OutputTokens != nil {
		c.Detail += fmt.Sprintf(", %d output tokens (%s)", *rec.OutputTokens, rec.TokenSource)
	}
	return c
}

// streamOptions checks the two stream options that give per-event token counts: whether the
// stream carried them, and if not, whether the server refused the option (the client dropped it)
// or accepted it and sent nothing.
func streamOptions(rec record.Request, kept openai.Options) []Check {
	option := func(name string, carried, stillAsked bool, other string, otherCarried bool) Check {
		c := Check{Name: name}
		switch {
		case carried:
			c.Result, c.Detail = OK, "every chunk carried it"
			return c
		case !stillAsked:
			c.Result, c.Detail = Missing, "the server refused it with 400 or 422; the runner drops it and sends the request again"
		default:
			c.Result, c.Detail = Missing, "the server accepted it but the stream did not carry it"
		}
		if otherCarried {
			c.Without = "per-event token counts come from " + other + " alone"
		} else {
			c.Without = fallbackTPOT
		}
		return c
	}
	return []Check{
		option("continuous_usage_stats", rec.ContinuousUsage, kept.ContinuousUsage, "return_token_ids", rec.ReturnTokenIDs),
		option("return_token_ids", rec.ReturnTokenIDs, kept.ReturnTokenIDs, "continuous_usage_stats", rec.ContinuousUsage),
	}
}

// metricColumns says, by metric name of a ServerNames, what the run fills from it.
func metricColumns(n openai.ServerNames) map[string]string {
	cols := map[string]string{}
	add := func(name, what string) {
		if name == "" {
			return
		}
		if cols[name] != "" {
			what = cols[name] + ", " + what
		}
		cols[name] = what
	}
	add(n.TTFT, "server_ttft_ms and client_overhead_ms")
	add(n.E2E, "server_e2e_ms")
	add(n.Queue, "server_queue_ms")
	add(n.Prefill, "server_prefill_ms")
	add(n.PrefillSecondsTotal, "server_prefill_ms")
	add(n.Decode, "server_decode_ms")
	add(n.DecodeSecondsTotal, "server_decode_ms")
	add(n.PromptTokens, "server_prompt_tokens")
	add(n.GenerationTokens, "server_generation_tokens")
	add(n.CacheQueries, "prefix_cache_queries")
	add(n.CacheHits, "prefix_cache_hits and the proof of a cache reset (cache_hit_after_reset)")
	add(n.Running, "the wait for running requests before a cache reset")
	add(n.Waiting, "the wait for queued requests before a cache reset")
	return cols
}

// metricNames checks that m serves every name of n the runner reads: its histograms and
// counters, and the gauges a cache reset waits on.
func metricNames(n openai.ServerNames, m *openai.Metrics) Check {
	c := Check{Name: "metric names"}
	cols := metricColumns(n)
	all := n.Served()
	for _, g := range []string{n.Running, n.Waiting} {
		if g != "" && !slices.Contains(all, g) {
			all = append(all, g)
		}
	}
	var missing, lost []string
	for _, name := range all {
		if !m.Has(name) {
			missing = append(missing, name)
			lost = append(lost, cols[name])
		}
	}
	if len(missing) == 0 {
		c.Result, c.Detail = OK, fmt.Sprintf("all %d %s names the runner reads", len(all), n.Dialect)
		return c
	}
	c.Result = Missing
	c.Detail = fmt.Sprintf("%s names not served: %s", n.Dialect, strings.Join(missing, ", "))
	c.Without = "leaves empty: " + strings.Join(lost, "; ")
	return c
}

// ttftHistogram checks that the server's TTFT histogram counted the one request sent between
// the two scrapes exactly once: the run keeps a request's server-side TTFT only then.
func ttftHistogram(n openai.ServerNames, before, after *openai.Metrics) Check {
	c := Check{Name: "ttft histogram"}
	without := "server_ttft_ms and client_overhead_ms stay empty"
	if n.TTFT == "" {
		c.Result, c.Detail, c.Without = Skipped, n.Dialect+" serves no TTFT histogram", without
		return c
	}
	d, ok := n.Delta(before, after)[openai.DeltaTTFT]
	switch {
	case !ok:
		c.Result, c.Detail, c.Without = Missing, n.TTFT+" is not served (or went backwards)", without
	case d.Count != 1:
		c.Result, c.Detail, c.Without = Missing, fmt.Sprintf("%s moved by %g for one request, not 1", n.TTFT, d.Count), without
	default:
		c.Result, c.Detail = OK, fmt.Sprintf("%s moved by 1 for one request (%.1f ms)", n.TTFT, d.Sum*1e3)
	}
	return c
}
