package sim

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// promSample is one sample line of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseProm parses the Prometheus text format strictly enough to catch malformed output: every
// sample's metric has a TYPE line before it, labels are quoted, values are numbers.
func parseProm(t *testing.T, text string) (samples []promSample, types map[string]string) {
	t.Helper()
	types = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("line %d: bad TYPE: %q", n, line)
			}
			types[f[2]] = f[3]
			continue
		case strings.HasPrefix(line, "# HELP "):
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			t.Fatalf("line %d: unexpected %q", n, line)
		}
		open, close := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || close < open {
			t.Fatalf("line %d: no labels: %q", n, line)
		}
		s := promSample{name: line[:open], labels: map[string]string{}}
		for _, kv := range strings.Split(line[open+1:close], ",") {
			k, v, ok := strings.Cut(kv, "=")
			uq, err := strconv.Unquote(v)
			if !ok || err != nil {
				t.Fatalf("line %d: bad label %q", n, kv)
			}
			s.labels[k] = uq
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[close+1:]), 64)
		if err != nil {
			t.Fatalf("line %d: bad value: %q", n, line)
		}
		s.value = v
		base := s.name
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(s.name, suf); ok && types[b] == "histogram" {
				base = b
			}
		}
		if _, ok := types[base]; !ok {
			t.Fatalf("line %d: %s has no TYPE line before it", n, s.name)
		}
		samples = append(samples, s)
	}
	return samples, types
}

func TestMetrics(t *testing.T) {
	_, ts := startServer(t, nil)
	const requests, maxTokens = 3, 5
	prompt := 0
	for i := range requests {
		resp, b, err := post(t, ts, "/v1/completions",
			fmt.Sprintf(`{"prompt":"the sun %d","max_tokens":%d,"stream":%v}`, i, maxTokens, i%2 == 0), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: HTTP %d, %v: %s", i, resp.StatusCode, err, b)
		}
		_, b, _ = post(t, ts, "/tokenize", fmt.Sprintf(`{"prompt":"the sun %d"}`, i), nil)
		var c struct{ Count int }
		if err := jsonUnmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		prompt += c.Count
	}
	resp, body := get(t, ts, "/metrics")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	samples, types := parseProm(t, string(body))
	value := func(name string, labels ...string) float64 {
		t.Helper()
	next:
		for _, s := range samples {
			if s.name != name {
				continue
			}
			for i := 0; i < len(labels); i += 2 {
				if s.labels[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return s.value
		}
		t.Fatalf("no sample %s %v", name, labels)
		return 0
	}
	for _, s := range samples {
		if s.labels["model_name"] != "sim/golden" || s.labels["engine"] != "0" {
			t.Errorf("%s labels %v, want model_name and engine", s.name, s.labels)
		}
	}
	if got := value("vllm:generation_tokens_total"); got != requests*maxTokens {
		t.Errorf("generation tokens %v, want %d", got, requests*maxTokens)
	}
	if got := value("vllm:prompt_tokens_total"); got != float64(prompt) {
		t.Errorf("prompt tokens %v, want %d", got, prompt)
	}
	if got := value("vllm:request_success_total", "finished_reason", "length"); got != requests {
		t.Errorf("requests finished by length: %v, want %d", got, requests)
	}
	if got := value("vllm:prefix_cache_queries_total"); got != float64(prompt) {
		t.Errorf("prefix cache queries %v, want %d", got, prompt)
	}
	value("vllm:prefix_cache_hits_total")
	for _, h := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
		"vllm:e2e_request_latency_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
		"vllm:request_queue_time_seconds", "vllm:request_time_per_output_token_seconds",
		"vllm:time_per_output_token_seconds"} {
		if types[h] != "histogram" {
			t.Errorf("%s is %q, want histogram", h, types[h])
			continue
		}
		// Per request, as vLLM's V1 logger observes them (vllm/v1/metrics/loggers.py, 0.11):
		// TTFT, e2e, the phases and the per-request TPOT once per finished request; the ITL
		// and the deprecated time_per_output_token once per gap between tokens.
		want := float64(requests)
		if h == "vllm:inter_token_latency_seconds" || h == "vllm:time_per_output_token_seconds" {
			want = requests * (maxTokens - 1)
		}
		if got := value(h + "_count"); got != want {
			t.Errorf("%s_count %v, want %v", h, got, want)
		}
		prev := -1.0
		for _, s := range samples {
			if s.name != h+"_bucket" {
				continue
			}
			if s.value < prev {
				t.Errorf("%s buckets are not cumulative at le=%s", h, s.labels["le"])
			}
			prev = s.value
			if s.labels["le"] == "+Inf" && s.value != want {
				t.Errorf("%s +Inf bucket %v, want the count %v", h, s.value, want)
			}
		}
	}
}

func TestPyFloat(t *testing.T) {
	cases := map[float64]string{
		0: "0.0", 3: "3.0", 0.001: "0.001", 1e-05: "1e-05", 1e16: "1e+16", 123456789: "123456789.0",
		13.223765562288463: "13.223765562288463", 2560: "2560.0", 0.25: "0.25", -2: "-2.0",
	}
	for v, want := range cases {
		if got := pyFloat(v); got != want {
			t.Errorf("pyFloat(%v) = %q, want %q", v, got, want)
		}
	}
}
