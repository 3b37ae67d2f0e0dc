package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

const planDescription = `
Show the configs an experiment file expands to, without running anything: for each config its
stable id, the id of the server config it runs on, its matrix axis values and the number of
requests it sends (warm-up + repetitions); then the totals: configs, server boots and requests,
which count one extra first request per server (sent right after it starts, kept apart from the
steady state).
Configs with the same server id share one server, booted once. The file is checked as by
'runner validate' first; an invalid file exits with status 2.

Formats: text, an aligned table; json, one object with "configs", "servers" and "totals"; csv,
one row per config with a header row. The json and csv field names are stable.`

// planFormats are the values of plan's --format flag.
var planFormats = []string{"text", "json", "csv"}

// cmdPlan prints the configs of an experiment file and what running it will cost.
func cmdPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", "runner plan FILE [--format text|json|csv]", planDescription, stderr)
	format := fs.String("format", "text", "output format: text, json or csv")
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError("plan: want exactly one experiment file, got %d (usage: runner plan FILE [--format text|json|csv])", len(files))
	}
	var write func(io.Writer, *plan) error
	switch *format {
	case "text":
		write = writePlanText
	case "json":
		write = writePlanJSON
	case "csv":
		write = writePlanCSV
	default:
		return usageError("plan: unknown format %q (want %s)", *format, strings.Join(planFormats, ", "))
	}
	e, err := experiment.Load(files[0])
	if err != nil {
		return planLoadError("plan", err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		return planLoadError("plan", err)
	}
	return write(stdout, newPlan(e, cfgs))
}

// planLoadError maps a load or expansion failure of the command cmd to exit status 2.
func planLoadError(cmd string, err error) error {
	var list experiment.ErrorList
	if errors.As(err, &list) {
		return &exitError{code: 2, msg: list.Error()}
	}
	return &exitError{code: 2, msg: "runner: " + cmd + ": " + err.Error()}
}

// plan is what `runner plan` reports; its JSON field names are part of the command's output
// format.
type plan struct {
	Experiment string       `json:"experiment"`
	File       string       `json:"file"`
	Axes       []string     `json:"axes"` // the axis paths, in column order
	Configs    []planConfig `json:"configs"`
	Servers    []planServer `json:"servers"`
	Totals     planTotals   `json:"totals"`
}

// planConfig is one config of a plan.
type planConfig struct {
	Index       int        `json:"index"`
	ID          string     `json:"id"`
	ServerID    string     `json:"server_id"`
	Label       string     `json:"label"`
	Axes        []planAxis `json:"axes"`
	Warmup      int        `json:"warmup"`
	Repetitions int        `json:"repetitions"`
	Requests    int        `json:"requests"`
}

// planAxis is one axis value of a config.
type planAxis struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// planServer is one distinct server config.
type planServer struct {
	ID      string `json:"id"`
	Engine  string `json:"engine"`
	Model   string `json:"model"`
	Boots   bool   `json:"boots"` // false for engine endpoint, which is already running
	Configs int    `json:"configs"`
}

// planTotals sums a plan.
type planTotals struct {
	Configs          int `json:"configs"`
	Servers          int `json:"servers"`
	ServerBoots      int `json:"server_boots"`
	FirstRequests    int `json:"first_requests"` // one per server, sent first, kept apart
	WarmupRequests   int `json:"warmup_requests"`
	MeasuredRequests int `json:"measured_requests"`
	Requests         int `json:"requests"`
}

// newPlan summarises the expanded configs of an experiment.
func newPlan(e *experiment.Experiment, cfgs []experiment.Config) *plan {
	p := &plan{Experiment: e.Name, File: e.Path, Axes: []string{}, Configs: []planConfig{}, Servers: []planServer{}}
	seenAxis := map[string]bool{}
	server := map[string]int{}
	for _, c := range cfgs {
		pc := planConfig{Index: c.Index, ID: c.ID, ServerID: c.ServerID, Label: c.Label, Axes: []planAxis{},
			Warmup: c.Warmup, Repetitions: c.Repetitions, Requests: experiment.AddSat(c.Warmup, c.Repetitions)}
		for _, a := range c.Axes {
			pc.Axes = append(pc.Axes, planAxis{Path: a.Path, Value: a.Value})
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
			p.Servers = append(p.Servers, planServer{ID: c.ServerID, Engine: c.Server.Engine, Model: c.Server.Model, Boots: boots})
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

// axisValue returns a config's value of an axis, or "" when the config does not set it (a point
// added by include may name only some axes).
func (c *planConfig) axisValue(path string) string {
	for _, a := range c.Axes {
		if a.Path == path {
			return a.Value
		}
	}
	return ""
}

// shortAxis names an axis column: the field name without its section.
func shortAxis(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

// writePlanText writes the plan as aligned tables and a totals line.
func writePlanText(w io.Writer, p *plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "experiment %s (%s)\n\n", p.Experiment, p.File)
	head := []string{"#", "id", "server"}
	for _, a := range p.Axes {
		head = append(head, shortAxis(a))
	}
	head = append(head, "requests")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, c := range p.Configs {
		row := []string{strconv.Itoa(c.Index), c.ID, c.ServerID}
		for _, a := range p.Axes {
			row = append(row, textCell(c.axisValue(a)))
		}
		row = append(row, fmt.Sprintf("%d (%d+%d)", c.Requests, c.Warmup, c.Repetitions))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	fmt.Fprintln(tw, "\nserver\tengine\tmodel\tconfigs")
	for _, s := range p.Servers {
		engine := s.Engine
		if !s.Boots {
			engine += " (not booted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", s.ID, engine, textCell(s.Model), s.Configs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := p.Totals
	_, err := fmt.Fprintf(w, "\n%s, %s, %s (%d first + %d warm-up + %d measured)\n",
		plural(t.Configs, "config"), plural(t.ServerBoots, "server boot"), plural(t.Requests, "request"),
		t.FirstRequests, t.WarmupRequests, t.MeasuredRequests)
	return err
}

// textCell keeps a table cell on one line and never empty.
func textCell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(s)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:37]) + "..."
	}
	return s
}

// writePlanJSON writes the plan as one indented JSON object.
func writePlanJSON(w io.Writer, p *plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// writePlanCSV writes one row per config: index, id, server_id, label, one column per axis
// (named by the field, empty where a config does not set it), warmup, repetitions, requests.
func writePlanCSV(w io.Writer, p *plan) error {
	cw := csv.NewWriter(w)
	head := []string{"index", "id", "server_id", "label"}
	for _, a := range p.Axes {
		head = append(head, shortAxis(a))
	}
	head = append(head, "warmup", "repetitions", "requests")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, c := range p.Configs {
		row := []string{strconv.Itoa(c.Index), c.ID, c.ServerID, c.Label}
		for _, a := range p.Axes {
			row = append(row, c.axisValue(a))
		}
		row = append(row, strconv.Itoa(c.Warmup), strconv.Itoa(c.Repetitions), strconv.Itoa(c.Requests))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
