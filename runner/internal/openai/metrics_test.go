package openai

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *Metrics {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "metrics", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ParseMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fmtBuckets(bs []Bucket) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%g:%g", b.UpperBound, b.Count))
	}
	return strings.Join(parts, " ")
}

func TestParseMetricsTwoEngines(t *testing.T) {
	m := parseFile(t, "vllm_v1_two_engines.prom")
	for _, name := range VLLMHistograms {
		if got := len(m.Find(name)); got != 2 {
			t.Errorf("%s: %d series, want 2 (one per engine)", name, got)
		}
	}
	ttft := m.Find(MetricTTFT)
	e0 := ttft[0]
	if e0.Label("engine") != "0" || e0.Label("model_name") != "/models/qwen2.5-0.5b" || e0.Label("le") != "" {
		t.Errorf("engine 0 labels %v", e0.Labels)
	}
	if !e0.HasSum || !e0.HasCount || e0.Sum != 0.123 || e0.Count != 10 {
		t.Errorf("engine 0 sum/count = %v %v / %v %v", e0.HasSum, e0.Sum, e0.HasCount, e0.Count)
	}
	if got, want := fmtBuckets(e0.Buckets), "0.001:0 0.005:2 0.01:5 0.02:9 0.04:10 +Inf:10"; got != want {
		t.Errorf("engine 0 buckets %s, want %s", got, want)
	}
	if mean, ok := e0.Mean(); !ok || math.Abs(mean-0.0123) > 1e-12 {
		t.Errorf("Mean() = %v, %v", mean, ok)
	}

	all, ok := m.Merged(MetricTTFT)
	if !ok || all.Count != 18 || math.Abs(all.Sum-0.323) > 1e-12 {
		t.Errorf("Merged: ok %v count %v sum %v", ok, all.Count, all.Sum)
	}
	if got, want := fmtBuckets(all.Buckets), "0.001:0 0.005:3 0.01:8 0.02:15 0.04:18 +Inf:18"; got != want {
		t.Errorf("merged buckets %s, want %s", got, want)
	}
	if _, ok := m.Merged("vllm:nonexistent"); ok {
		t.Error("Merged found an absent family")
	}

	if v, ok := m.Value("vllm:generation_tokens_total", Label{"engine", "1"}); !ok || v != 512 {
		t.Errorf("generation_tokens_total{engine=1} = %v, %v", v, ok)
	}
	if _, ok := m.Value("vllm:time_to_first_token_seconds_count"); ok {
		t.Error("a histogram's _count is listed as a plain sample")
	}
	if len(m.Samples) != 4 {
		t.Errorf("%d plain samples, want 4", len(m.Samples))
	}
}

func TestParseMetricsExcerpts(t *testing.T) {
	doc := parseFile(t, "vllm_docs_excerpt.prom")
	h := doc.Find(MetricTTFT)
	if len(h) != 1 || h[0].HasSum || !h[0].HasCount || h[0].Count != 45 || len(h[0].Buckets) != 8 {
		t.Fatalf("docs excerpt: %+v", h)
	}
	if _, ok := h[0].Mean(); ok {
		t.Error("Mean() without a _sum reported a value")
	}
	if h[0].Buckets[7].UpperBound != 0.1 {
		t.Errorf("last bucket %v, want 0.1 (no +Inf in the excerpt)", h[0].Buckets[7])
	}

	frag := parseFile(t, "untyped_fragment.prom")
	h = frag.Find(MetricTPOTDeprecated)
	if len(h) != 1 || h[0].Sum != 12.5 || h[0].Count != 31 || fmtBuckets(h[0].Buckets) != "2.5:30 5:31 +Inf:31" {
		t.Fatalf("untyped fragment: %+v", h)
	}
	if len(frag.Samples) != 0 {
		t.Errorf("untyped fragment left plain samples %v", frag.Samples)
	}
}

func TestHistogramSub(t *testing.T) {
	before := Histogram{Name: "h", Sum: 1, Count: 4, HasSum: true, HasCount: true,
		Buckets: []Bucket{{0.1, 1}, {1, 3}, {math.Inf(1), 4}}}
	after := Histogram{Name: "h", Sum: 3.5, Count: 9, HasSum: true, HasCount: true,
		Buckets: []Bucket{{0.1, 2}, {1, 7}, {math.Inf(1), 9}}}
	d := after.Sub(&before)
	if d.Sum != 2.5 || d.Count != 5 || fmtBuckets(d.Buckets) != "0.1:1 1:4 +Inf:5" {
		t.Errorf("Sub = %+v", d)
	}
}

func TestParseMetricsSyntax(t *testing.T) {
	ok := []struct{ in, name, labels string }{
		{`a 1`, "a", "[]"},
		{`a{} 1`, "a", "[]"},
		{`a{b="x",} 1 1712345678000`, "a", "[{b x}]"},
		{`a{z="1", b="q\"uo\\te\nx"} NaN`, "a", `[{b q"uo\te` + "\n" + `x} {z 1}]`},
		{`ns:sub_total{le="x"} -Inf`, "ns:sub_total", "[{le x}]"},
		{`a{b="has } and , inside"} 2`, "a", "[{b has } and , inside}]"},
	}
	for _, tt := range ok {
		m, err := ParseMetrics(strings.NewReader(tt.in + "\n"))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if len(m.Samples) != 1 || m.Samples[0].Name != tt.name || fmt.Sprint(m.Samples[0].Labels) != tt.labels {
			t.Errorf("%q: samples %+v", tt.in, m.Samples)
		}
	}
	bad := []struct{ in, want string }{
		{"# TYPE a gauge\n\n...\n", "line 3"},
		{"a 1\n$ curl http://x/metrics\n", "line 2"},
		{"a{b=\"x} 1\n", "line 1"},
		{"a{b=x} 1\n", "line 1"},
		{"a one\n", "line 1"},
		{"a 1 2 3\n", "line 1"},
		{"a 1 soon\n", "line 1"},
		{"# TYPE h histogram\nh_bucket{le=\"big\"} 1\n", "line 2"},
		{"<html><body>502 Bad Gateway</body></html>\n", "line 1"},
		{"a{b=\"1\"} 1\n# TYPE a counter\n", "line 2"},
		{"# TYPE h histogram\nh_count -1\n", "line 2"},
	}
	for _, tt := range bad {
		_, err := ParseMetrics(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one naming %s", tt.in, err, tt.want)
		}
	}
}

// FuzzParseMetrics checks that no input panics, that an error names its line, that parsed
// histograms are well formed, that a parse does not depend on anything but its input, and
// that the text format written back from a parse parses to the same result.
func FuzzParseMetrics(f *testing.F) {
	for _, name := range []string{"vllm_v1_two_engines.prom", "vllm_docs_excerpt.prom", "untyped_fragment.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", "metrics", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("a{b=\"\\\"\"} +Inf 5\n# TYPE h histogram\nh_sum 1\n")
	for _, c := range textCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseMetrics(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "metrics: ") || !errLine.MatchString(err.Error()) {
				t.Errorf("error %q lacks the metrics: prefix or a line", err)
			}
			return
		}
		for _, h := range m.Histograms {
			if h.Name == "" {
				t.Errorf("histogram without a name: %+v", h)
			}
			if h.Label("le") != "" {
				t.Errorf("histogram keeps le among its labels: %+v", h.Labels)
			}
			if !slices.IsSortedFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) }) {
				t.Errorf("buckets not sorted: %v", h.Buckets)
			}
		}
		got := renderParse(in)
		if again := renderParse(in); again != got {
			t.Fatalf("two parses differ:\n%s\n%s", got, again)
		}
		text, ok := writeText(m)
		if !ok {
			return
		}
		if back := renderParse(text); back != got {
			t.Errorf("written back as\n%s\nit parses to\n%s\nnot\n%s", text, back, got)
		}
	})
}

// writeText writes m in the text format: each histogram under a TYPE line, every plain sample
// untyped. It reports false for what the format cannot say back unchanged: a plain sample or
// a histogram whose name is another histogram's with or without a suffix, which the parser
// would read into that histogram, and the negative counts that only an untyped histogram can
// hold, -0 among them.
func writeText(m *Metrics) (string, bool) {
	taken := map[string]int{}
	for _, h := range m.Histograms {
		if slices.ContainsFunc(h.Buckets, func(b Bucket) bool { return math.Signbit(b.Count) }) || h.HasCount && math.Signbit(h.Count) {
			return "", false
		}
		if i := slices.IndexFunc(m.Histograms, func(x *Histogram) bool { return x.Name == h.Name }); m.Histograms[i] != h {
			continue // another series of a family already counted
		}
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			taken[h.Name+suffix]++
		}
	}
	for _, h := range m.Histograms {
		if taken[h.Name] > 1 {
			return "", false
		}
	}
	for _, s := range m.Samples {
		if taken[s.Name] > 0 {
			return "", false
		}
	}
	var b strings.Builder
	labels := func(ls []Label, extra ...Label) string {
		var parts []string
		for _, l := range append(slices.Clone(ls), extra...) {
			v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l.Value)
			parts = append(parts, l.Name+`="`+v+`"`)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	typed := map[string]bool{}
	for _, h := range m.Histograms {
		if !typed[h.Name] {
			typed[h.Name] = true
			fmt.Fprintf(&b, "# TYPE %s histogram\n", h.Name)
		}
		// A sample of the bare name without le makes the series without adding to it.
		fmt.Fprintf(&b, "%s%s 0\n", h.Name, labels(h.Labels))
		for _, x := range h.Buckets {
			fmt.Fprintf(&b, "%s_bucket%s %s\n", h.Name, labels(h.Labels, Label{"le", renderFloat(x.UpperBound)}), renderFloat(x.Count))
		}
		if h.HasSum {
			fmt.Fprintf(&b, "%s_sum%s %s\n", h.Name, labels(h.Labels), renderFloat(h.Sum))
		}
		if h.HasCount {
			fmt.Fprintf(&b, "%s_count%s %s\n", h.Name, labels(h.Labels), renderFloat(h.Count))
		}
	}
	for _, s := range m.Samples {
		fmt.Fprintf(&b, "%s%s %s\n", s.Name, labels(s.Labels), renderFloat(s.Value))
	}
	return b.String(), true
}

// TestPresentNamesOnlyServed checks that Present names only what a page serves: a server that
// lacks one of its dialect's names (here vLLM's queue-time histogram) must not be said to have
// had it read, since its column stays empty.
func TestPresentNamesOnlyServed(t *testing.T) {
	page := `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 1
vllm:time_to_first_token_seconds_sum 0.5
vllm:time_to_first_token_seconds_count 1
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total 12
`
	m, err := ParseMetrics(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := DetectServerNames(m)
	if !ok || n.Dialect != "vllm" {
		t.Fatalf("detected %q, %v; want vllm", n.Dialect, ok)
	}
	got := n.Present(m)
	want := []string{"vllm:time_to_first_token_seconds", "vllm:prompt_tokens_total"}
	if !slices.Equal(got, want) {
		t.Errorf("Present = %v, want %v (Served lists %d names)", got, want, len(n.Served()))
	}
}
