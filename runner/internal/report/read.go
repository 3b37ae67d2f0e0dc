package report

import (
	"fmt"
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
	Configs []experiment.Config
	// Requests are the folder's request rows. Read leaves out their events and texts, and
	// keeps what the charts need of the events in events; a Folder built with the events in
	// each request's EventList is drawn alike.
	Requests []record.Request
	Servers  []results.ServerInfo
	// Telemetry holds the GPU samples taken while its servers ran; nil without a GPU.
	Telemetry []record.GPUSample
	// Notes are what the reader skipped (a torn last line of an interrupted folder), one
	// sentence each.
	Notes []string

	// events holds, by request id, the event figures of the requests that Read read without
	// their events (each such request's EventList is the empty, non-nil readElsewhere); nil
	// when the requests carry their events.
	events map[string]*eventFigures
	// reader reads the events of the one request a timeline draws.
	reader *results.Reader
}

// eventFigures is what the charts need of one request's events, gathered as events.csv is
// read, so that the report holds a few numbers per event instead of the events.
type eventFigures struct {
	n           int           // events
	gaps        []float64     // ms between consecutive text events
	prevText    time.Duration // the last text event's time, -1 before the first
	tokens      int           // tokens carried by the text events that say
	tokenEvents int           // text events that say how many tokens they carried
}

// add takes in the request's next event.
func (e *eventFigures) add(ev *record.Event) {
	e.n++
	if !ev.Text {
		return
	}
	if e.prevText >= 0 {
		e.gaps = append(e.gaps, float64(ev.SinceT0-e.prevText)/1e6)
	}
	e.prevText = ev.SinceT0
	if ev.Tokens != nil {
		e.tokens += *ev.Tokens
		e.tokenEvents++
	}
}

// readElsewhere is the EventList of a request that Read read without its events: empty but not
// nil, so that a request whose EventList a caller empties (nil) has no events, as before.
var readElsewhere = []record.Event{}

// elsewhere reports whether q's events were left in events.csv, their figures in f.events.
func (f *Folder) elsewhere(q *record.Request) bool {
	return f.events != nil && q.EventList != nil && len(q.EventList) == 0
}

// figuresOf returns the event figures of the request q of f.
func (f *Folder) figuresOf(q *record.Request) *eventFigures {
	if f.elsewhere(q) {
		if e := f.events[results.RequestID(q.ConfigID, q.Seq)]; e != nil {
			return e
		}
	}
	e := &eventFigures{prevText: -1}
	for i := range q.EventList {
		e.add(&q.EventList[i])
	}
	return e
}

// withEvents returns q with its events: q itself when it carries them, else a copy with the
// events read from events.csv.
func (f *Folder) withEvents(q *record.Request) (*record.Request, error) {
	if !f.elsewhere(q) || f.reader == nil {
		return q, nil
	}
	cp := *q
	cp.EventList = nil
	id := results.RequestID(q.ConfigID, q.Seq)
	err := f.reader.EachEvent(func(e *results.EventRow) error {
		if e.RequestID == id {
			cp.EventList = append(cp.EventList, e.Event)
		}
		return nil
	})
	return &cp, err
}

// Read reads the result folder dir through the results package: its manifest, its requests
// without their events and texts, what the charts need of each request's events, and its
// servers. It reads requests.csv and events.csv one row at a time and keeps a few numbers per
// event, so that a folder of millions of events is drawn in the memory of its requests.
func Read(dir string) (*Folder, error) {
	r, err := results.Open(dir)
	if err != nil {
		return nil, err
	}
	f := &Folder{Dir: dir, Manifest: r.Manifest(), Status: r.Status(), reader: r}
	if err := f.readRequests(r); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if f.Servers, err = r.Servers(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if f.Telemetry, err = r.Telemetry(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	f.Notes = r.Notes()
	configs := append([]experiment.Config(nil), f.Manifest.Configs...)
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].Index < configs[j].Index })
	f.Configs = configsOf(results.GroupByConfig(configs, f.Requests))
	return f, nil
}

// readRequests reads the requests of r into f, and the figures of their events.
func (f *Folder) readRequests(r *results.Reader) error {
	if err := r.EachRequest(func(q *record.Request) error {
		f.Requests = append(f.Requests, *q)
		return nil
	}); err != nil {
		return err
	}
	figures := make([]eventFigures, len(f.Requests))
	f.events = make(map[string]*eventFigures, len(f.Requests))
	for i := range f.Requests {
		q := &f.Requests[i]
		q.EventList = readElsewhere
		figures[i].prevText = -1
		f.events[results.RequestID(q.ConfigID, q.Seq)] = &figures[i]
	}
	var orphans int
	if err := r.EachEvent(func(e *results.EventRow) error {
		fig, ok := f.events[e.RequestID]
		if !ok {
			orphans++
			return nil
		}
		fig.add(&e.Event)
		return nil
	}); err != nil {
		return err
	}
	if orphans > 0 {
		r.Note(fmt.Sprintf("%s: skipped %d events of requests that have no row in %s", results.EventsFile, orphans, results.RequestsFile))
	}
	return nil
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
	f      *Folder
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
		cd := &configData{f: f, cfg: c}
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
