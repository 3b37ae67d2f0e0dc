package results

import "github.com/onelayerdown/runner/runner/internal/record"

// Value returns the metric's value for the request r, and false when r has none (a failed
// request, or a tpot of a request with a single text event). Durations are in milliseconds,
// counts in units, as in summary.csv.
func (m Metric) Value(r *record.Request) (float64, bool) { return m.value(r) }
