package openai

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The vLLM histograms the runner reads from /metrics, server-side counterparts of its own
// client-side measurements, as vLLM's V1 engine names them (vllm/v1/metrics/loggers.py,
// PrometheusStatLogger).
const (
	// MetricTTFT has one observation per request: arrival to first token.
	MetricTTFT = "vllm:time_to_first_token_seconds"
	// MetricITL has one observation per gap between consecutive outputs of a request (one
	// token each without speculative decoding). vLLM 0.10.2 and later.
	MetricITL = "vllm:inter_token_latency_seconds"
	// MetricTPOT has one observation per finished request: its decode time divided by its
	// generated tokens after the first, the per-request mean TPOT. Added in vLLM 0.11
	// (pull request 24015).
	MetricTPOT = "vllm:request_time_per_output_token_seconds"
	// MetricTPOTDeprecated is the older name, which is not per request: it records every
	// inter-token gap, the same observations as MetricITL. Deprecated in vLLM 0.11, hidden
	// from 0.12 unless --show-hidden-metrics-for-version=0.11, removed in 0.13.
	MetricTPOTDeprecated = "vllm:time_per_output_token_seconds"
	// MetricE2E has one observation per finished request: arrival to last token.
	MetricE2E = "vllm:e2e_request_latency_seconds"
	// MetricPrefill has one observation per finished request: its time in prefill.
	MetricPrefill = "vllm:request_prefill_time_seconds"
)

// VLLMHistograms lists the histograms above that a current vLLM serves; the deprecated per-gap
// name is not among them.
var VLLMHistograms = []string{MetricTTFT, MetricITL, MetricTPOT, MetricE2E, MetricPrefill}

// Label is one label of a sample.
type Label struct {
	Name, Value string
}

// Bucket is one cumulative histogram bucket: Count observations were at most UpperBound.
type Bucket struct {
	UpperBound float64 // +Inf for the last bucket
	Count      float64
}

// Histogram is one histogram series: a family name and one set of labels.
type Histogram struct {
	Name    string  // the family name, without _bucket, _sum or _count
	Labels  []Label // sorted by name; "le" is not among them
	Buckets []Bucket
	// Sum and Count are the _sum and _count samples; HasSum and HasCount say whether they
	// were present (excerpts of a dump may lack them).
	Sum, Count       float64
	HasSum, HasCount bool
}

// Label returns the value of the named label, or "".
func (h *Histogram) Label(name string) string {
	for _, l := range h.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Mean returns Sum/Count, and false when either is missing or Count is zero.
func (h *Histogram) Mean() (float64, bool) {
	if !h.HasSum || !h.HasCount || h.Count == 0 {
		return 0, false
	}
	return h.Sum / h.Count, true
}

// Sub returns the observations h holds beyond prev, an earlier scrape of the same series:
// counts, sum and buckets are subtracted bucket by bucket. Buckets only h has are kept whole.
func (h *Histogram) Sub(prev *Histogram) Histogram {
	out := Histogram{Name: h.Name, Labels: h.Labels, Sum: h.Sum - prev.Sum, Count: h.Count - prev.Count,
		HasSum: h.HasSum && prev.HasSum, HasCount: h.HasCount && prev.HasCount}
	for _, b := range h.Buckets {
		c := b.Count
		for _, p := range prev.Buckets {
			if p.UpperBound == b.UpperBound {
				c -= p.Count
				break
			}
		}
		out.Buckets = append(out.Buckets, Bucket{b.UpperBound, c})
	}
	return out
}

// Sample is one sample that is not part of a histogram (a counter, a gauge, ...).
type Sample struct {
	Name   string
	Labels []Label // sorted by name
	Value  float64
}

// Metrics is a parsed Prometheus text exposition.
type Metrics struct {
	// Histograms holds every histogram series, in the order of their first sample.
	Histograms []*Histogram
	// Samples holds every other sample, in order.
	Samples []Sample
}

// Find returns the series of the named histogram family, one per label set (vLLM's V1
// engine writes one per data-parallel engine, labelled engine="0", "1", ...).
func (m *Metrics) Find(name string) []*Histogram {
	var out []*Histogram
	for _, h := range m.Histograms {
		if h.Name == name {
			out = append(out, h)
		}
	}
	return out
}

// Merged adds up every series of the named histogram family, bucket by bucket, into one;
// it reports false when the family is absent.
func (m *Metrics) Merged(name string) (Histogram, bool) {
	series := m.Find(name)
	if len(series) == 0 {
		return Histogram{}, false
	}
	out := Histogram{Name: name, HasSum: true, HasCount: true}
	for _, h := range series {
		out.Sum += h.Sum
		out.Count += h.Count
		out.HasSum = out.HasSum && h.HasSum
		out.HasCount = out.HasCount && h.HasCount
		for _, b := range h.Buckets {
			i := slices.IndexFunc(out.Buckets, func(x Bucket) bool { return x.UpperBound == b.UpperBound })
			if i < 0 {
				out.Buckets = append(out.Buckets, b)
			} else {
				out.Buckets[i].Count += b.Count
			}
		}
	}
	slices.SortFunc(out.Buckets, func(a, b Bucket) int { return cmpFloat(a.UpperBound, b.UpperBound) })
	return out, true
}

// Value returns the value of the first plain sample with the given name whose labels include
// all of match, and whether there was one.
func (m *Metrics) Value(name string, match ...Label) (float64, bool) {
	for _, s := range m.Samples {
		if s.Name != name {
			continue
		}
		ok := true
		for _, want := range match {
			ok = ok && slices.Contains(s.Labels, want)
		}
		if ok {
			return s.Value, true
		}
	}
	return 0, false
}

// rawSample is one parsed sample line.
type rawSample struct {
	line   int
	name   string
	labels []Label
	value  float64
}

// maxMetricsLine caps one line of a /metrics page: 1 MiB. A sample line is a name, a few short
// labels and a number, well under a KiB; a longer line is no Prometheus text.
const maxMetricsLine = 1 << 20

// ParseMetrics parses the Prometheus text format (version 0.0.4) that vLLM's /metrics serves.
// A family is a histogram when a "# TYPE name histogram" line says so, or when it has
// name_bucket samples with an "le" label (excerpts may lack the TYPE line). Errors name the
// line.
func ParseMetrics(r io.Reader) (*Metrics, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxMetricsLine)
	types := map[string]string{}
	var raw []rawSample
	n := 1 // the line being read
	for ; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line[0] == '#' {
			f := strings.Fields(line)
			if len(f) >= 4 && f[1] == "TYPE" {
				types[f[2]] = f[3]
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics: line %d: %w", n, err)
		}
		s.line = n
		raw = append(raw, s)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("metrics: line %d is longer than the %s limit: %w", n, FormatSize(maxMetricsLine), err)
	} else if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	for _, s := range raw {
		if base, ok := strings.CutSuffix(s.name, "_bucket"); ok && base != "" && hasLabel(s.labels, "le") {
			if _, declared := types[base]; !declared {
				types[base] = "histogram"
			}
		}
	}

	m := &Metrics{}
	index := map[string]*Histogram{}
	for _, s := range raw {
		base, part := histogramPart(s.name, types)
		if part == "" {
			m.Samples = append(m.Samples, Sample{Name: s.name, Labels: s.labels, Value: s.value})
			continue
		}
		var le string
		labels := make([]Label, 0, len(s.labels))
		for _, l := range s.labels {
			if l.Name == "le" {
				le = l.Value
				continue
			}
			labels = append(labels, l)
		}
		key := seriesKey(base, labels)
		h := index[key]
		if h == nil {
			h = &Histogram{Name: base, Labels: labels}
			index[key] = h
			m.Histograms = append(m.Histograms, h)
		}
		switch part {
		case "bucket":
			ub, err := parseFloat(le)
			if err != nil || math.IsNaN(ub) {
				return nil, fmt.Errorf("metrics: line %d: %s: bad le %q", s.line, s.name, le)
			}
			h.Buckets = append(h.Buckets, Bucket{ub, s.value})
		case "sum":
			h.Sum, h.HasSum = s.value, true
		case "count":
			h.Count, h.HasCount = s.value, true
		}
	}
	for _, h := range m.Histograms {
		slices.SortStableFunc(h.Buckets, func(a, b Bucket) int { return cmpFloat(a.UpperBound, b.UpperBound) })
	}
	return m, nil
}

// histogramPart splits a sample name into its histogram family and part (bucket, sum,
// count); part is "" for a sample outside any histogram.
func histogramPart(name string, types map[string]string) (string, string) {
	for _, part := range []string{"bucket", "sum", "count"} {
		if base, ok := strings.CutSuffix(name, "_"+part); ok && base != "" && types[base] == "histogram" {
			return base, part
		}
	}
	return name, ""
}

func hasLabel(ls []Label, name string) bool {
	return slices.ContainsFunc(ls, func(l Label) bool { return l.Name == name })
}

func seriesKey(name string, ls []Label) string {
	var b strings.Builder
	b.WriteString(name)
	for _, l := range ls {
		b.WriteByte(0)
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
	}
	return b.String()
}

// parseSample parses `name{l="v",...} value [timestamp]`.
func parseSample(line string) (rawSample, error) {
	var s rawSample
	i := 0
	for i < len(line) && isNameByte(line[i], i == 0) {
		i++
	}
	if i == 0 {
		return s, fmt.Errorf("bad metric name in %q", line)
	}
	s.name = line[:i]
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		labels, n, err := parseLabels(rest)
		if err != nil {
			return s, fmt.Errorf("%s: %w", s.name, err)
		}
		s.labels = labels
		rest = rest[n:]
	}
	f := strings.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("%s: want a value and an optional timestamp, got %q", s.name, strings.TrimSpace(rest))
	}
	v, err := parseFloat(f[0])
	if err != nil {
		return s, fmt.Errorf("%s: bad value %q", s.name, f[0])
	}
	if len(f) == 2 {
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			return s, fmt.Errorf("%s: bad timestamp %q", s.name, f[1])
		}
	}
	s.value = v
	slices.SortFunc(s.labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

// parseLabels parses `{a="x",b="y"}` at the start of s and returns the labels and the number
// of bytes used.
func parseLabels(s string) ([]Label, int, error) {
	var labels []Label
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return labels, i + 1, nil
		}
		start := i
		for i < len(s) && isNameByte(s[i], i == start) && s[i] != ':' {
			i++
		}
		if i == start {
			return nil, 0, fmt.Errorf("bad label name at %q", s[start:])
		}
		name := s[start:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i+1 >= len(s) || s[i] != '=' || s[i+1] != '"' {
			return nil, 0, fmt.Errorf("label %s: want =\"", name)
		}
		i += 2
		var v strings.Builder
		for {
			if i >= len(s) {
				return nil, 0, fmt.Errorf("label %s: unterminated value", name)
			}
			c := s[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
				i++
				continue
			}
			v.WriteByte(c)
			i++
		}
		labels = append(labels, Label{name, v.String()})
	}
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == ':':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// parseFloat parses a Prometheus value: a Go float, or +Inf, -Inf, NaN.
func parseFloat(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
