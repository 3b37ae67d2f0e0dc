// Package plan describes what running an experiment will do, before anything runs: its
// configs, the servers they share and the requests they send, and writes that in the formats
// of `runner plan`.
package plan

import (
	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// Plan is what `runner plan` reports of an expanded experiment; its JSON field names are part of
// the command's output format.
type Plan struct {
	Experiment string   `json:"experiment"`
	File       string   `json:"file"`
	Axes       []string `json:"axes"` // the axis paths, in column order
	Configs    []Config `json:"configs"`
	Servers    []Server `json:"servers"`
	Totals     Totals   `json:"totals"`
	// Shards is the assignment of the configs to machines (see Split); absent unless asked for.
	Shards []Shard `json:"shards,omitempty"`
}

// Config is one config of a plan.
type Config struct {
	Index       int    `json:"index"`
	ID          string `json:"id"`
	ServerID    string `json:"server_id"`
	Label       string `json:"label"`
	Axes        []Axis `json:"axes"`
	Warmup      int    `json:"warmup"`
	Repetitions int    `json:"repetitions"`
	Requests    int    `json:"requests"`
}

// Axis is one axis value of a config.
type Axis struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Server is one distinct server config.
type Server struct {
	ID      string `json:"id"`
	Engine  string `json:"engine"`
	Model   string `json:"model"`
	Boots   bool   `json:"boots"` // false for engine endpoint, which is already running
	Configs int    `json:"configs"`
}

// Totals sums a plan.
type Totals struct {
	Configs          int `json:"configs"`
	Servers          int `json:"servers"`
	ServerBoots      int `json:"server_boots"`
	FirstRequests    int `json:"first_requests"` // one per server, sent first, kept apart
	WarmupRequests   int `json:"warmup_requests"`
	MeasuredRequests int `json:"measured_requests"`
	Requests         int `json:"requests"`
}

// New summarises the expanded configs of an experiment.
func New(e *experiment.Experiment, cfgs []experiment.Config) *Plan {
	p := &Plan{Experiment: e.Name, File: e.Path, Axes: []string{}, Configs: []Config{}, Servers: []Server{}}
	seenAxis := map[string]bool{}
	server := map[string]int{}
	for _, c := range cfgs {
		pc := Config{Index: c.Index, ID: c.ID, ServerID: c.ServerID, Label: c.Label, Axes: []Axis{},
			Warmup: c.Warmup, Repetitions: c.Repetitions, Requests: experiment.AddSat(c.Warmup, c.Repetitions)}
		for _, a := range c.Axes {
			pc.Axes = append(pc.Axes, Axis{Path: a.Path, Value: a.Value})
			if !seenAxis[a.Path] {
				seenAxis[a.Path] = true
				p.Axes = append(p.Axes, a.Path)
			}
		}
		p.Configs = append(p.Configs, pc)
		i, ok := server[c.ServerID]
		if !ok {
			i = len(p.Servers)
			server[c.ServerID] = i
			boots := experiment.Boots(c.Server.Engine)
			p.Servers = append(p.Servers, Server{ID: c.ServerID, Engine: c.Server.Engine, Model: c.Server.Model, Boots: boots})
			if boots {
				p.Totals.ServerBoots++
			}
		}
		p.Servers[i].Configs++
		p.Totals.WarmupRequests = experiment.AddSat(p.Totals.WarmupRequests, c.Warmup)
		p.Totals.MeasuredRequests = experiment.AddSat(p.Totals.MeasuredRequests, c.Repetitions)
	}
	p.Totals.Configs = len(p.Configs)
	p.Totals.Servers = len(p.Servers)
	// Each server's first request after it starts is an extra request, recorded in phase first.
	p.Totals.FirstRequests = len(p.Servers)
	p.Totals.Requests = experiment.Requests(cfgs)
	return p
}

// AxisValue returns the config's value of an axis, or "" when the config does not set it (a
// point added by include may name only some axes).
func (c *Config) AxisValue(path string) string {
	for _, a := range c.Axes {
		if a.Path == path {
			return a.Value
		}
	}
	return ""
}
