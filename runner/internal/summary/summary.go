// Package summary describes one result folder for people: the statistics of each config and
// metric, the configs that never succeeded and why, the warnings and the prefill/decode fits,
// and writes that in the formats of `runner summary`.
package summary

import (
	"fmt"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// Report is what `runner summary` shows of a folder.
type Report struct {
	Manifest *results.Manifest
	Status   results.Status
	Requests int // measured requests
	Failed   int // measured requests that failed
	Rows     []results.SummaryRow
	Notes    []string          // what the reader noticed about the folder, for stderr
	Fits     []decompose.Sweep // prefill/decode fits per sweep
	// Dead says, for each config none of whose measured requests succeeded, how they failed;
	// text and markdown show such a config as one line instead of a row of empty metrics.
	Dead map[string]string
	// Load holds each config as a load point (load.csv) when a config has a load section or an
	// SLO; nil otherwise, and the formats then show no load table.
	Load []results.LoadRow
}

// Read reads the result folder dir and summarises it. It reads the requests one at a time and
// keeps only their figures (results.ReadDigest), neither their events nor their texts, so that
// a folder of any size is summarised in the memory of a few numbers per request.
func Read(dir string) (*Report, error) {
	r, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	configs := r.Manifest().Configs
	fits := decompose.NewFitter(configs)
	byConfig := map[string]*tally{}
	var measured, failed int
	l, err := r.ReadDigest(func(q *record.Request) {
		fits.Add(q)
		if q.Phase != record.PhaseMeasure {
			return
		}
		measured++
		t := byConfig[q.ConfigID]
		if t == nil {
			t = &tally{causes: map[string]int{}}
			byConfig[q.ConfigID] = t
		}
		t.measured++
		if q.Status != record.StatusOK {
			failed++
			t.failed++
			t.causes[failureCause(*q)]++
		}
	})
	if err != nil {
		return nil, err
	}
	rep := &Report{Manifest: l.Manifest, Status: l.Status, Notes: append(l.Notes, serverNotes(l.Manifest.Servers)...),
		Rows: l.Digest.Summary(), Fits: fits.Sweeps(), Requests: measured, Failed: failed}
	if showLoad(configs, l.Digest) {
		rep.Load = l.Load
		if rep.Load == nil {
			rep.Load = l.Digest.Load()
		}
	}
	rep.Dead = map[string]string{}
	for id, t := range byConfig {
		if line, dead := t.dead(); dead {
			rep.Dead[id] = line
		}
	}
	return rep, nil
}

// tally counts a config's measured requests, the failed ones by cause.
type tally struct {
	measured, failed int
	causes           map[string]int
}

// dead says how the config's measured requests failed, when none succeeded.
func (t *tally) dead() (string, bool) {
	if t.failed < t.measured {
		return "", false
	}
	cause, most := "", 0
	for c, n := range t.causes {
		if n > most || (n == most && c < cause) {
			cause, most = c, n
		}
	}
	line := fmt.Sprintf("no successful request: %d of %d measured requests failed", t.failed, t.measured)
	if most == t.failed {
		line += ": " + cause
	} else {
		line += fmt.Sprintf(", %d of them: %s", most, cause)
	}
	return line, true
}

// serverNotes returns what went wrong beside the servers that is worth a note: a GPU sampler
// that failed, exited or hung, whose requests then have empty GPU cells. A note is printed as it
// is, so the sampler's words have their control characters escaped (tabular.Visible).
func serverNotes(servers []results.ServerInfo) []string {
	var out []string
	for _, s := range servers {
		if s.TelemetryWarning != "" {
			out = append(out, fmt.Sprintf("server %s: %s", s.ServerID, tabular.Visible(s.TelemetryWarning)))
		}
	}
	return out
}

// showLoad reports whether a config has a load section or an SLO, or a request was sent under
// load.
func showLoad(configs []experiment.Config, d *results.Digest) bool {
	for _, c := range configs {
		if c.Load != nil || len(c.SLO) > 0 {
			return true
		}
	}
	for _, g := range d.Configs() {
		if g.LoadRows {
			return true
		}
	}
	return false
}

// failureCause is a failed request's error class and the first line of its error, shortened.
func failureCause(q record.Request) string {
	msg, _, _ := strings.Cut(q.Error, "\n")
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:159]) + "…"
	}
	if q.ErrorClass == "" {
		return msg
	}
	return string(q.ErrorClass) + ": " + msg
}

// split returns the rows of the configs with at least one successful measured request, and the
// labels and causes of the others, in row order.
func (s *Report) split() (live []results.SummaryRow, dead [][2]string) {
	seen := map[string]bool{}
	for _, r := range s.Rows {
		cause, ok := s.Dead[r.ConfigID]
		if !ok {
			live = append(live, r)
			continue
		}
		if !seen[r.ConfigID] {
			seen[r.ConfigID] = true
			dead = append(dead, [2]string{r.Label, cause})
		}
	}
	return live, dead
}

// headline is the one-line description of the folder above the table.
func (s *Report) headline() string {
	return fmt.Sprintf("experiment %s, status %s, %d measured requests (%d failed), started %s",
		s.Manifest.Experiment.Name, s.Status, s.Requests, s.Failed, s.Manifest.Start.UTC().Format("2006-01-02T15:04:05Z"))
}
