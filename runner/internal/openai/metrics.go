package openai

import (
	"cmp"
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
	// Histograms holds every histogram series, sorted by name and labels.
	Histograms []*Histogram
	// Samples holds every other sample, sorted by name and labels; samples of one series keep
	// their input order.
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
	slices.SortFunc(out.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
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

// ParseMetrics parses the Prometheus text format (version 0.0.4) that vLLM's /metrics serves.
// A family is a histogram when a "# TYPE name histogram" line says so, or when it has
// name_bucket samples with an "le" label (excerpts may lack the TYPE line). Summaries become
// plain samples: name_sum, name_count and one sample per quantile. Histograms and samples are
// sorted by name and labels. Errors name the line; garbage is an error, never a panic.
func ParseMetrics(r io.Reader) (m *Metrics, err error) {
	// The parser is not known to panic on any input, but a /metrics page comes from another
	// process: a panic in it must fail the scrape, not the run.
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("metrics: the parser failed: %v", p)
		}
	}()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m, lines, err := parseText(string(b))
	if err != nil {
		return nil, err
	}
	if err := m.foldUntyped(lines); err != nil {
		return nil, err
	}
	// No upper bound is NaN (a NaN le drops the sample or fails the parse), so cmp.Compare's
	// placing NaN first never comes into play.
	for _, h := range m.Histograms {
		slices.SortStableFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
	}
	slices.SortFunc(m.Histograms, func(a, b *Histogram) int {
		return strings.Compare(seriesKey(a.Name, a.Labels), seriesKey(b.Name, b.Labels))
	})
	slices.SortStableFunc(m.Samples, func(a, b Sample) int {
		return strings.Compare(seriesKey(a.Name, a.Labels), seriesKey(b.Name, b.Labels))
	})
	return m, nil
}

// foldUntyped turns the untyped samples of a histogram whose TYPE line is missing (name_bucket
// with an "le" label, name_sum, name_count) into a histogram. lines holds the input line of
// each sample, for the errors.
func (m *Metrics) foldUntyped(lines []int) error {
	bases := map[string]bool{}
	for _, s := range m.Samples {
		if base, ok := strings.CutSuffix(s.Name, "_bucket"); ok && base != "" && hasLabel(s.Labels, "le") {
			bases[base] = true
		}
	}
	if len(bases) == 0 {
		return nil
	}
	index := map[string]*Histogram{}
	for _, h := range m.Histograms {
		index[seriesKey(h.Name, h.Labels)] = h
	}
	var rest []Sample
	for i, s := range m.Samples {
		base, part := "", ""
		for _, suffix := range []string{"bucket", "sum", "count"} {
			if b, ok := strings.CutSuffix(s.Name, "_"+suffix); ok && bases[b] {
				base, part = b, suffix
				break
			}
		}
		if part == "" {
			rest = append(rest, s)
			continue
		}
		var le string
		labels := make([]Label, 0, len(s.Labels))
		for _, l := range s.Labels {
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
			ub, err := strconv.ParseFloat(le, 64)
			if err != nil || math.IsNaN(ub) {
				return fmt.Errorf("metrics: text format parsing error in line %d: %s: bad le %q", lines[i], s.Name, le)
			}
			h.Buckets = append(h.Buckets, Bucket{ub, s.Value})
		case "sum":
			h.Sum, h.HasSum = s.Value, true
		case "count":
			h.Count, h.HasCount = s.Value, true
		}
	}
	m.Samples = rest
	for _, h := range m.Histograms {
		slices.SortStableFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
	}
	return nil
}

func sortedLabels(ls []Label) []Label {
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

func hasLabel(ls []Label, name string) bool {
	return slices.ContainsFunc(ls, func(l Label) bool { return l.Name == name })
}

// seriesKey orders and identifies series by name and labels, NUL between the parts.
func seriesKey(name string, ls []Label) string { return joinSeries(name, ls, 0) }

// joinSeries returns a series' name and its labels' names and values, sep between each.
func joinSeries(name string, ls []Label, sep byte) string {
	var b strings.Builder
	b.WriteString(name)
	for _, l := range ls {
		b.WriteByte(sep)
		b.WriteString(l.Name)
		b.WriteByte(sep)
		b.WriteString(l.Value)
	}
	return b.String()
}
