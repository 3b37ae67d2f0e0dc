package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// Direction says which changes of a metric a Threshold fails on.
type Direction int

// The directions of a threshold.
const (
	Up     Direction = +1 // an increase beyond the threshold fails ("+10%")
	Down   Direction = -1 // a decrease beyond the threshold fails ("-10%")
	Either Direction = 0  // a change either way beyond the threshold fails ("±10%")
)

// Threshold is one rule of the gate: a metric that changes significantly, in the rule's
// direction, by more than Percent of its old median, fails the comparison.
type Threshold struct {
	Metric    string    // a results metric name: ttft_ms, tpot_token_ms, output_tokens, ...
	Direction Direction //
	Percent   float64   // at least 0; 0 fails on any significant change in the direction
}

// String returns the threshold as --fail-on takes it, with the full metric name: ttft_ms:+10%.
func (t Threshold) String() string { return t.Metric + ":" + t.Limit() }

// Limit returns the threshold without its metric: +10%, -5%, ±2%.
func (t Threshold) Limit() string {
	sign := map[Direction]string{Up: "+", Down: "-", Either: "±"}[t.Direction]
	return sign + strconv.FormatFloat(t.Percent, 'f', -1, 64) + "%"
}

// Exceeded reports whether a change of changePct percent is beyond the threshold: above
// +Percent for Up, below −Percent for Down, either for Either. The comparison is strict, so a
// change of exactly the threshold passes. An undefined change (NaN) exceeds nothing.
func (t Threshold) Exceeded(changePct float64) bool {
	switch t.Direction {
	case Up:
		return changePct > t.Percent
	case Down:
		return changePct < -t.Percent
	default:
		return math.Abs(changePct) > t.Percent
	}
}

// MetricNames returns the names a metric may be given by on the command line, canonical first:
// ttft_ms and ttft, output_tokens.
func MetricNames() [][]string {
	var out [][]string
	for _, m := range results.Metrics() {
		names := []string{m.Name}
		if short, ok := strings.CutSuffix(m.Name, "_ms"); ok {
			names = append(names, short)
		}
		out = append(out, names)
	}
	return out
}

// FailedMetric names the gate's rule on failed requests: failed:+N% fails a config whose share
// of failed measured requests grew by more than N percentage points. It is not a results
// metric: it has no rows of its own, only gate reasons.
const FailedMetric = "failed"

// ParseMetric returns the results metric name that name stands for: ttft and ttft_ms both
// give ttft_ms; failed gives FailedMetric; goodput, throughput and rate (or their load.csv
// column names) give GoodputMetric, ThroughputMetric and RateMetric. Case does not matter.
func ParseMetric(name string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if key == FailedMetric {
		return FailedMetric, nil
	}
	if m, ok := loadMetricNamed(key); ok {
		return m.name, nil
	}
	var all []string
	for _, names := range MetricNames() {
		for _, n := range names {
			if n == key {
				return names[0], nil
			}
		}
		all = append(all, names[len(names)-1])
	}
	all = append(all, FailedMetric, GoodputMetric, ThroughputMetric, RateMetric)
	return "", fmt.Errorf("unknown metric %q (want one of %s)", name, strings.Join(all, ", "))
}

// ParseThresholds reads a --fail-on value: comma-separated METRIC:LIMIT rules, where LIMIT is a
// percentage with a sign, +N% (an increase by more than N% fails), -N% (a decrease by more than
// N% fails) or ±N% (also written +-N%: either), and a bare N% means +N%. Example:
// "ttft:+10%,tpot_token:+5%". Spaces around the parts are allowed; an empty value gives no
// rules. A metric may appear once.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[string]bool{}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, limit, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("threshold %q: want METRIC:LIMIT, e.g. ttft:+10%%", part)
		}
		metric, err := ParseMetric(name)
		if err != nil {
			return nil, fmt.Errorf("threshold %q: %w", part, err)
		}
		if seen[metric] {
			return nil, fmt.Errorf("threshold %q: %s has a threshold already", part, metric)
		}
		seen[metric] = true
		t := Threshold{Metric: metric, Direction: Up}
		limit = strings.TrimSpace(limit)
		switch {
		case strings.HasPrefix(limit, "±"):
			t.Direction, limit = Either, strings.TrimPrefix(limit, "±")
		case strings.HasPrefix(limit, "+-"):
			t.Direction, limit = Either, limit[2:]
		case strings.HasPrefix(limit, "+"):
			limit = limit[1:]
		case strings.HasPrefix(limit, "-"):
			t.Direction, limit = Down, limit[1:]
		}
		num, ok := strings.CutSuffix(limit, "%")
		if !ok {
			return nil, fmt.Errorf("threshold %q: the limit must be a percentage such as +10%%", part)
		}
		p, err := strconv.ParseFloat(num, 64)
		if err != nil || !isDecimal(num) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("threshold %q: %q is not a number of percent", part, num)
		}
		t.Percent = p
		out = append(out, t)
	}
	return out, nil
}

// isDecimal reports whether s is digits with at most one decimal point among or after them:
// 10, 2.5, 0.25, 5.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && digits > 0:
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
