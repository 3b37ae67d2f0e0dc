package sim

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Histogram bucket bounds, in seconds, as vLLM's V1 engine uses them.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a Prometheus histogram: cumulative counts are computed when written.
type histogram struct {
	name, help string
	bounds     []float64
	counts     []uint64 // per bucket, not cumulative; the last one is +Inf
	sum        float64
	count      uint64
	frozen     bool // never observes: the freeze-metric fault
}

func newHistogram(name, help string, bounds []float64) *histogram {
	return &histogram{name: name, help: help, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	if h.frozen {
		return
	}
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: Prometheus buckets are le
	h.counts[i]++
	h.sum += v
	h.count++
}

// metrics holds what GET /metrics reports.
type metrics struct {
	mu sync.Mutex

	ttft, itl, tpot, tpotOld, e2e, queue, inference, prefill, decode *histogram

	promptTokens, generationTokens float64
	success                        map[string]float64 // by finished_reason
}

func newMetrics() *metrics {
	return &metrics{
		ttft: newHistogram("vllm:time_to_first_token_seconds",
			"Time from a request's arrival to its first generated token, in seconds.", ttftBuckets),
		itl: newHistogram("vllm:inter_token_latency_seconds",
			"Time between consecutive generated tokens, in seconds.", itlBuckets),
		// vLLM 0.11 added the per-request histogram (vllm/v1/metrics/loggers.py, pull request
		// 24015): one observation per finished request, decode time / (generated tokens - 1).
		tpot: newHistogram("vllm:request_time_per_output_token_seconds",
			"Mean time per output token after the first, per request, in seconds.", itlBuckets),
		// The older name records every inter-token gap, like the ITL histogram. vLLM 0.11
		// still serves it, marked deprecated; 0.12 hides it and 0.13 removed it.
		tpotOld: newHistogram("vllm:time_per_output_token_seconds",
			"Time between consecutive generated tokens, in seconds. DEPRECATED: the same as vllm:inter_token_latency_seconds.", itlBuckets),
		e2e: newHistogram("vllm:e2e_request_latency_seconds",
			"Time from a request's arrival to its last token, in seconds.", requestBuckets),
		queue: newHistogram("vllm:request_queue_time_seconds",
			"Time a request waited before its prefill began, in seconds.", requestBuckets),
		inference: newHistogram("vllm:request_inference_time_seconds",
			"Prefill plus decode time of a request, in seconds.", requestBuckets),
		prefill: newHistogram("vllm:request_prefill_time_seconds",
			"Prefill time of a request, in seconds.", requestBuckets),
		decode: newHistogram("vllm:request_decode_time_seconds",
			"Decode time of a request, in seconds.", requestBuckets),
		success: map[string]float64{"stop": 0, "length": 0, "abort": 0},
	}
}

// requestTimes are one finished request's times, as the engine saw them.
type requestTimes struct {
	ttft, e2e, queue, prefill, decode time.Duration
	itls                              []time.Duration // one per token after the first
	finish                            string
	generated                         int
}

func (m *metrics) addPrompt(n int) {
	m.mu.Lock()
	m.promptTokens += float64(n)
	m.mu.Unlock()
}

func (m *metrics) finished(t requestTimes) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generationTokens += float64(t.generated)
	m.success[t.finish]++
	if t.finish == "abort" {
		return
	}
	m.ttft.observe(t.ttft.Seconds())
	m.e2e.observe(t.e2e.Seconds())
	m.queue.observe(t.queue.Seconds())
	m.prefill.observe(t.prefill.Seconds())
	m.decode.observe(t.decode.Seconds())
	m.inference.observe((t.prefill + t.decode).Seconds())
	for _, d := range t.itls {
		m.itl.observe(d.Seconds())
		m.tpotOld.observe(d.Seconds())
	}
	if t.generated > 1 {
		m.tpot.observe(t.decode.Seconds() / float64(t.generated-1))
	}
}

// gauges are the instantaneous values written beside the histograms.
type gauges struct {
	running, waiting          int64
	cacheQueries, cacheHits   int64
	cacheBlocks, cacheBlocks0 int
}

// write writes the metrics in the Prometheus text format, with vLLM's metric names and the labels
// engine="0" and model_name.
func (m *metrics) write(w io.Writer, model string, g gauges) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lbl := `engine="0",model_name="` + escapeLabel(model) + `"`
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, lbl, pyFloat(v))
	}
	counter := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %s\n", name, help, name, name, lbl, pyFloat(v))
	}
	gauge("vllm:num_requests_running", "Requests in generation.", float64(g.running))
	gauge("vllm:num_requests_waiting", "Requests waiting for a generation slot.", float64(g.waiting))
	usage := 0.0
	if g.cacheBlocks0 > 0 {
		usage = float64(g.cacheBlocks) / float64(g.cacheBlocks0)
	}
	gauge("vllm:kv_cache_usage_perc", "Fraction of prefix-cache blocks in use (1 means full).", usage)
	counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", float64(g.cacheQueries))
	counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", float64(g.cacheHits))
	counter("vllm:prompt_tokens_total", "Prompt tokens processed.", m.promptTokens)
	counter("vllm:generation_tokens_total", "Generation tokens produced.", m.generationTokens)

	fmt.Fprintf(&b, "# HELP vllm:request_success_total Finished requests, by finish reason.\n# TYPE vllm:request_success_total counter\n")
	for _, r := range []string{"stop", "length", "abort"} {
		fmt.Fprintf(&b, "vllm:request_success_total{engine=\"0\",finished_reason=%q,model_name=\"%s\"} %s\n",
			r, escapeLabel(model), pyFloat(m.success[r]))
	}
	for _, h := range []*histogram{m.ttft, m.itl, m.tpot, m.tpotOld, m.e2e, m.queue, m.inference, m.prefill, m.decode} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", h.name, h.help, h.name)
		var cum uint64
		for i, c := range h.counts {
			cum += c
			le := "+Inf"
			if i < len(h.bounds) {
				le = pyFloat(h.bounds[i])
			}
			fmt.Fprintf(&b, "%s_bucket{engine=\"0\",le=\"%s\",model_name=\"%s\"} %s\n",
				h.name, le, escapeLabel(model), pyFloat(float64(cum)))
		}
		fmt.Fprintf(&b, "%s_count{%s} %s\n", h.name, lbl, pyFloat(float64(h.count)))
		fmt.Fprintf(&b, "%s_sum{%s} %s\n", h.name, lbl, pyFloat(h.sum))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// freeze stops the named histograms from observing anything, for the freeze-metric fault.
func (m *metrics) freeze(names map[string]bool) {
	for _, h := range []*histogram{m.ttft, m.itl, m.tpot, m.tpotOld, m.e2e, m.queue, m.inference, m.prefill, m.decode} {
		h.frozen = names[h.name]
	}
}

// hideMetrics returns the Prometheus text page without the families named in hidden: their
// HELP and TYPE lines and every sample of them (a histogram's _bucket, _sum and _count, a
// counter's _total), for the hide-metric fault.
func hideMetrics(page []byte, hidden map[string]bool) []byte {
	if len(hidden) == 0 {
		return page
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(page, []byte("\n")) {
		name := string(line)
		if rest, ok := strings.CutPrefix(name, "# "); ok {
			f := strings.Fields(rest)
			name = ""
			if len(f) > 1 {
				name = f[1]
			}
		} else if i := strings.IndexAny(name, "{ "); i >= 0 {
			name = name[:i]
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && hidden[base] {
				name = base
			}
		}
		if !hidden[name] {
			out.Write(line)
		}
	}
	return out.Bytes()
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// pyFloat formats v as Python's repr does, which is how vLLM's Prometheus client writes
// values: 3.0, 0.001, 1e-05, 1e+16, 13.223765562288463.
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == 0:
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
