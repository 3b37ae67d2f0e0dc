package report

import (
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/onelayerdown/runner/runner/internal/decompose"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// Folder is one result folder as the report reads it.
type Folder struct {
	Dir      string
	Manifest *results.Manifest
	Status   results.Status
	// Configs are the manifest's configs in expansion order, then any config that only the
	// requests name.
	Configs  []experiment.Config
	Requests []record.Request
	Servers  []results.ServerInfo
	// Telemetry holds the GPU samples taken while its servers ran; nil without a GPU.
	Telemetry []record.GPUSample
	// Notes are what the reader skipped (a torn last line of an interrupted folder), one
	// sentence each.
	Notes []string
}

// Read reads the result folder dir through the results package: its manifest, its requests
// with their events, and its servers.
func Read(dir string) (*Folder, error) {
	l, err := results.ReadAll(dir)
	if err != nil {
		return nil, err
	}
	f := &Folder{Dir: dir, Manifest: l.Manifest, Status: l.Status, Requests: l.Requests, Servers: l.Servers, Telemetry: l.Telemetry, Notes: l.Notes}
	configs := append([]experiment.Config(nil), f.Manifest.Configs...)
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].Index < configs[j].Index })
	f.Configs = configsOf(results.GroupByConfig(configs, f.Requests))
	return f, nil
}

// configsOf returns the configs of groups; a config that only the rows name takes its
// position as its Index.
func configsOf(groups []results.ConfigRequests) []experiment.Config {
	configs := make([]experiment.Config, len(groups))
	for i, g := range groups {
		configs[i] = g.Config
		if !g.Listed {
			configs[i].Index = i
		}
	}
	return configs
}

// Name returns the folder's base name, as the report names it.
func (f *Folder) Name() string { return filepath.Base(filepath.Clean(f.Dir)) }

// configData is one config of a folder with its measured, successful requests: the rows that
// every chart uses (warm-up requests, the first request after a boot and failed requests are
// left out, as in the summary).
type configData struct {
	cfg    experiment.Config
	ok     []*record.Request
	failed int
}

// label is how charts name a config: its label, or its id when it has none.
func (c *configData) label() string {
	if c.cfg.Label != "" {
		return c.cfg.Label
	}
	return c.cfg.ID
}

// run is one folder as a report shows it, in a role: "" alone, "old" or "new" in a comparison.
type run struct {
	role    string
	f       *Folder
	configs []*configData
	byLabel map[string]*configData
	sweeps  []decompose.Sweep
	load    []*loadSeries // the load points by series; empty for a folder without load points
}

func newRun(role string, f *Folder) *run {
	r := &run{role: role, f: f, byLabel: map[string]*configData{}}
	groups := results.GroupByConfig(f.Configs, f.Requests)
	for i, c := range configsOf(groups) {
		cd := &configData{cfg: c}
		r.configs = append(r.configs, cd)
		r.byLabel[cd.label()] = cd
		for _, q := range groups[i].Requests {
			if q.Phase != record.PhaseMeasure {
				continue
			}
			if q.Status != record.StatusOK {
				cd.failed++
				continue
			}
			cd.ok = append(cd.ok, q)
		}
	}
	r.sweeps = decompose.Sweeps(f.Configs, f.Requests)
	r.load = loadSeriesOf(r)
	return r
}

// suffix is what a legend adds to a name to tell the runs apart.
func (r *run) suffix() string {
	if r.role == "" {
		return ""
	}
	return " (" + r.role + ")"
}

// msOf returns a duration in milliseconds, and whether it is present.
func msOf(d *time.Duration) (float64, bool) {
	if d == nil {
		return 0, false
	}
	return float64(*d) / 1e6, true
}

// promptTokens returns the prompt length of a request as the fits take it: the server's count
// when it reported one, else the requested count.
func promptTokens(q *record.Request) (float64, bool) {
	switch {
	case q.PromptTokensReported != nil:
		return float64(*q.PromptTokensReported), true
	case q.PromptTokensRequested != nil:
		return float64(*q.PromptTokensRequested), true
	}
	return 0, false
}

// outputTokens returns the output length of a request: its counted output tokens, else the
// max_tokens it asked for.
func outputTokens(q *record.Request) (float64, bool) {
	if q.OutputTokens != nil {
		return float64(*q.OutputTokens), true
	}
	if q.MaxTokens > 0 {
		return float64(q.MaxTokens), true
	}
	return 0, false
}

// gaps returns the gaps in ms between consecutive text events of a request.
func gaps(q *record.Request) []float64 {
	var out []float64
	prev := time.Duration(-1)
	for _, e := range q.EventList {
		if !e.Text {
			continue
		}
		if prev >= 0 {
			out = append(out, float64(e.SinceT0-prev)/1e6)
		}
		prev = e.SinceT0
	}
	return out
}

// values collects a metric over requests, leaving out those without it.
func values(qs []*record.Request, get func(*record.Request) (float64, bool)) []float64 {
	var out []float64
	for _, q := range qs {
		if v, ok := get(q); ok {
			out = append(out, v)
		}
	}
	return out
}

// otherAxesName names a config by its axes other than skip ("max_tokens=64"), or "all
// configs" when it has no other axis.
func otherAxesName(c experiment.Config, skip []string) string {
	var name string
	for _, a := range c.Axes {
		if slices.Contains(skip, a.Path) {
			continue
		}
		if name != "" {
			name += ","
		}
		name += shortName(a.Path) + "=" + a.Value
	}
	if name == "" {
		return decompose.AllConfigs
	}
	return name
}

func shortName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}
