package openai

import "slices"

// ServerNames are the Prometheus names one engine family serves for what the runner joins to a
// request: per-request histograms in seconds, and counters. An empty name is one the engine
// does not serve.
type ServerNames struct {
	// Dialect names the family: "vllm", "sglang" or "llamacpp".
	Dialect string
	// Histograms with one observation per finished request, in seconds. The difference of
	// their _sum between two scrapes, with their _count grown by exactly one, is that one
	// request's value.
	TTFT, E2E, Queue, Prefill, Decode string
	// Counters of seconds summed over every request, which llama.cpp keeps instead of
	// histograms: their difference is the prefill or decode time of whatever ran between
	// the scrapes, with no count that says how many requests that was.
	PrefillSecondsTotal, DecodeSecondsTotal string
	// Counters of tokens: prompt tokens processed, generated tokens, and the prefix cache's
	// queried and hit tokens.
	PromptTokens, GenerationTokens, CacheQueries, CacheHits string
	// Gauges of the requests running and waiting now, which a cache reset waits to see at zero
	// (see InFlight). Only vLLM's are read: the other engines' resets need no such wait.
	Running, Waiting string
}

// ServerMetricNames is the one table of the metric names the runner reads from each engine's
// /metrics, as the engines' own sources name them: vLLM's V1 engine
// (vllm/v1/metrics/loggers.py, PrometheusStatLogger; the simulator serves the same names),
// SGLang's (python/sglang/srt/metrics/collector.py, with --enable-metrics) and llama-server's
// (tools/server/server.cpp, with --metrics). A Prometheus counter is served with "_total"
// appended to the name its source declares.
var ServerMetricNames = []ServerNames{
	{
		Dialect: "vllm",
		TTFT:    MetricTTFT, E2E: MetricE2E,
		Queue:   "vllm:request_queue_time_seconds",
		Prefill: MetricPrefill, Decode: "vllm:request_decode_time_seconds",
		PromptTokens:     "vllm:prompt_tokens_total",
		GenerationTokens: "vllm:generation_tokens_total",
		CacheQueries:     "vllm:prefix_cache_queries_total",
		CacheHits:        "vllm:prefix_cache_hits_total",
		Running:          "vllm:num_requests_running",
		Waiting:          "vllm:num_requests_waiting",
	},
	{
		// SGLang has no per-request prefill or decode histogram, and counts cached prompt
		// tokens (by cache_source) but not the tokens looked up.
		Dialect: "sglang",
		TTFT:    "sglang:time_to_first_token_seconds", E2E: "sglang:e2e_request_latency_seconds",
		Queue:            "sglang:queue_time_seconds",
		PromptTokens:     "sglang:prompt_tokens_total",
		GenerationTokens: "sglang:generation_tokens_total",
		CacheHits:        "sglang:cached_tokens_total",
	},
	{
		// llama-server keeps counters only: no TTFT, end-to-end or queue time, no count of
		// requests, and no prefix-cache counters (its prompt_tokens_total counts the prompt
		// tokens it evaluated, cached ones left out).
		Dialect:             "llamacpp",
		PrefillSecondsTotal: "llamacpp:prompt_seconds_total",
		DecodeSecondsTotal:  "llamacpp:tokens_predicted_seconds_total",
		PromptTokens:        "llamacpp:prompt_tokens_total",
		GenerationTokens:    "llamacpp:tokens_predicted_total",
	},
}

// DetectServerNames returns the entry of ServerMetricNames whose names m serves, and false when
// it serves none of them.
func DetectServerNames(m *Metrics) (ServerNames, bool) {
	for _, n := range ServerMetricNames {
		for _, name := range []string{n.TTFT, n.E2E, n.PrefillSecondsTotal, n.PromptTokens} {
			if name != "" && m.Has(name) {
				return n, true
			}
		}
	}
	return ServerNames{}, false
}

// Has reports whether m serves the metric name, as a histogram or as plain samples.
func (m *Metrics) Has(name string) bool {
	if _, ok := m.Merged(name); ok {
		return true
	}
	_, ok := m.Total(name)
	return ok
}

// Total returns the sum of every plain sample with the given name, over all its label sets
// (one per data-parallel engine, one per cache source), and false when there is none.
func (m *Metrics) Total(name string) (float64, bool) {
	var sum float64
	found := false
	for _, s := range m.Samples {
		if s.Name == name {
			sum += s.Value
			found = true
		}
	}
	return sum, found
}

// InFlight returns the requests a server runs and queues now, summed over its engines (one
// label set per data-parallel engine), from the Running and Waiting gauges of the first entry
// of ServerMetricNames whose gauges m serves; known is false when m serves none.
func InFlight(m *Metrics) (busy float64, known bool) {
	for _, n := range ServerMetricNames {
		for _, name := range []string{n.Running, n.Waiting} {
			if name == "" {
				continue
			}
			if v, ok := m.Total(name); ok {
				busy += v
				known = true
			}
		}
		if known {
			return busy, true
		}
	}
	return 0, false
}

// Change is how much one histogram or counter grew between two scrapes.
type Change struct {
	Sum float64 // the growth of a histogram's _sum, or of a counter
	// Count is the growth of a histogram's _count: the observations between the scrapes; -1
	// for a counter, which has none.
	Count float64
}

// Mean returns Sum/Count, and false for a counter or when nothing was observed.
func (c Change) Mean() (float64, bool) {
	if c.Count <= 0 {
		return 0, false
	}
	return c.Sum / c.Count, true
}

// ServerDelta is what a server's metrics say about the requests it served between two scrapes,
// by ServerNames field: "TTFT", "E2E", "Queue", "Prefill", "Decode", "PromptTokens",
// "GenerationTokens", "CacheQueries", "CacheHits". A figure the server does not serve, or
// that went backwards (the server restarted), is absent.
type ServerDelta map[string]Change

// The keys of a ServerDelta.
const (
	DeltaTTFT             = "TTFT"
	DeltaE2E              = "E2E"
	DeltaQueue            = "Queue"
	DeltaPrefill          = "Prefill"
	DeltaDecode           = "Decode"
	DeltaPromptTokens     = "PromptTokens"
	DeltaGenerationTokens = "GenerationTokens"
	DeltaCacheQueries     = "CacheQueries"
	DeltaCacheHits        = "CacheHits"
)

// Delta returns what changed between before and after, two scrapes of one server.
func (n ServerNames) Delta(before, after *Metrics) ServerDelta {
	d := ServerDelta{}
	hist := func(key, name string) {
		if name == "" {
			return
		}
		a, ok1 := after.Merged(name)
		b, ok2 := before.Merged(name)
		if !ok1 || !ok2 || !a.HasSum || !b.HasSum || !a.HasCount || !b.HasCount {
			return
		}
		c := Change{Sum: a.Sum - b.Sum, Count: a.Count - b.Count}
		if c.Count < 0 || c.Sum < 0 {
			return
		}
		d[key] = c
	}
	counter := func(key, name string) {
		if name == "" {
			return
		}
		a, ok1 := after.Total(name)
		b, ok2 := before.Total(name)
		if !ok1 || !ok2 || a < b {
			return
		}
		d[key] = Change{Sum: a - b, Count: -1}
	}
	hist(DeltaTTFT, n.TTFT)
	hist(DeltaE2E, n.E2E)
	hist(DeltaQueue, n.Queue)
	hist(DeltaPrefill, n.Prefill)
	hist(DeltaDecode, n.Decode)
	counter(DeltaPrefill, n.PrefillSecondsTotal)
	counter(DeltaDecode, n.DecodeSecondsTotal)
	counter(DeltaPromptTokens, n.PromptTokens)
	counter(DeltaGenerationTokens, n.GenerationTokens)
	counter(DeltaCacheQueries, n.CacheQueries)
	counter(DeltaCacheHits, n.CacheHits)
	return d
}

// Requests returns how many requests finished between the two scrapes, from the count of the
// end-to-end histogram (or the TTFT one), and false when the server counts none (llama.cpp).
func (d ServerDelta) Requests() (float64, bool) {
	for _, k := range []string{DeltaE2E, DeltaTTFT} {
		if c, ok := d[k]; ok {
			return c.Count, true
		}
	}
	return 0, false
}

// Present returns the names of n that m serves, in the order of Served: what a run reads of a
// server whose /metrics page is m.
func (n ServerNames) Present(m *Metrics) []string {
	var out []string
	for _, s := range n.Served() {
		if m.Has(s) {
			out = append(out, s)
		}
	}
	return out
}

// Served returns the names n reads, for documentation and messages.
func (n ServerNames) Served() []string {
	var out []string
	for _, s := range []string{n.TTFT, n.E2E, n.Queue, n.Prefill, n.Decode, n.PrefillSecondsTotal,
		n.DecodeSecondsTotal, n.PromptTokens, n.GenerationTokens, n.CacheQueries, n.CacheHits} {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
