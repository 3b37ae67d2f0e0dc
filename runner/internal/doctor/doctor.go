// Package doctor checks, in about a minute, that an install of an engine behaves as the runner
// relies on: it boots each distinct server config of an experiment once (or connects to it, for
// engine: endpoint) and tries each thing a run depends on — readiness, the version, the context
// length, the tokenizer endpoint in each of its forms, the stream options, the prefix cache
// reset, the /metrics names and histograms, and GPU telemetry — reporting for each what the
// runner will do without it. It boots and measures through the run's own packages (engine,
// openai, measure, telemetry), so that what it finds is what a run would meet.
package doctor

import (
	"context"
	"io"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// Result is the outcome of one check.
type Result string

// The results of a check. Only Failed makes the report fail: something the experiment needs is
// missing. Missing is an optional thing the runner can do without, Unverified a thing present
// whose effect could not be proved, Skipped a check that does not apply.
const (
	OK         Result = "ok"
	Missing    Result = "missing"
	Failed     Result = "failed"
	Unverified Result = "unverified"
	Skipped    Result = "skipped"
)

// Check is one thing the runner relies on, as found.
type Check struct {
	Name   string `json:"check"`
	Result Result `json:"result"`
	// Detail says what was found: the figure, the answer, or the error.
	Detail string `json:"detail"`
	// Without says what the runner does without it; empty when the check passed.
	Without string `json:"without,omitempty"`
}

// Server is the checks of one server config.
type Server struct {
	ID     string  `json:"server_id"`
	Engine string  `json:"engine"`
	Model  string  `json:"model"`
	Checks []Check `json:"checks"`
}

// Report is what the doctor found: one entry per server config, then the machine's GPU
// telemetry (Machine, empty when not checked).
type Report struct {
	Experiment string   `json:"experiment"`
	Servers    []Server `json:"servers"`
	Machine    []Check  `json:"machine"`
}

// Failed reports whether something the experiment needs is missing.
func (r *Report) Failed() bool {
	for _, s := range r.Servers {
		for _, c := range s.Checks {
			if c.Result == Failed {
				return true
			}
		}
	}
	for _, c := range r.Machine {
		if c.Result == Failed {
			return true
		}
	}
	return false
}

// Options configure a check.
type Options struct {
	// Executable is the runner's own executable, which serves engine: sim; empty means this
	// program's.
	Executable string
	// Log receives each server's output; nil discards it.
	Log io.Writer
	// Progress receives one line per server as it boots; nil discards them.
	Progress io.Writer
	// NvidiaSMI is the nvidia-smi to check; empty looks it up in the PATH.
	NvidiaSMI string
	// NoTelemetry leaves the GPU telemetry unchecked.
	NoTelemetry bool
	// TelemetryWindow bounds how long the telemetry check waits for samples; zero means 5
	// seconds.
	TelemetryWindow time.Duration
	// StopGrace is how long a server gets to exit after SIGTERM; zero means the engine's
	// default.
	StopGrace time.Duration
}

// Run checks every distinct server config of cfgs, in their order, then the GPU telemetry. It
// returns an error only when ctx ends; everything else is a check's result.
func Run(ctx context.Context, e *experiment.Experiment, cfgs []experiment.Config, o Options) (*Report, error) {
	r := &Report{Experiment: e.Name}
	for _, g := range groups(cfgs) {
		s := checkServer(ctx, g, o)
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r.Servers = append(r.Servers, s)
	}
	if !o.NoTelemetry {
		r.Machine = checkTelemetry(ctx, o)
	}
	return r, ctx.Err()
}

// group is the configs of one server config, in expansion order.
type group struct {
	id      string
	server  experiment.Server
	configs []experiment.Config
}

// groups returns cfgs grouped by server config, in the order each first appears.
func groups(cfgs []experiment.Config) []group {
	var out []group
	index := map[string]int{}
	for _, c := range cfgs {
		i, ok := index[c.ServerID]
		if !ok {
			i = len(out)
			index[c.ServerID] = i
			out = append(out, group{id: c.ServerID, server: c.Server})
		}
		out[i].configs = append(out[i].configs, c)
	}
	return out
}

// needsReset reports whether any config of g asks for an emptied cache before every request.
func (g group) needsReset() bool {
	for _, c := range g.configs {
		if c.Cache == "reset" {
			return true
		}
	}
	return false
}

// stopTimeout bounds the stop of a server the doctor booted.
const stopTimeout = 30 * time.Second

// checkServer boots or connects to g's server and runs its checks; a server that does not
// become ready has only its readiness check.
func checkServer(ctx context.Context, g group, o Options) Server {
	out := Server{ID: g.id, Engine: g.server.Engine, Model: g.server.Model}
	start := time.Now()
	srv, err := engine.Start(ctx, g.server, engine.StartOptions{
		Log: o.Log, Progress: o.Progress, Executable: o.Executable, StopGrace: o.StopGrace,
	})
	if err != nil {
		out.Checks = append(out.Checks, Check{Name: "readiness", Result: Failed, Detail: err.Error(),
			Without: "no request of this server runs: each is recorded failed"})
		return out
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		srv.Stop(sctx)
	}()
	out.Engine, out.Model = srv.Engine(), srv.Model()
	out.Checks = append(out.Checks, Check{Name: "readiness", Result: OK,
		Detail: "ready at " + srv.BaseURL() + " after " + time.Since(start).Round(time.Millisecond).String()})
	p := newProbe(srv, g)
	out.Checks = append(out.Checks, p.version(), p.maxModelLen(ctx))
	out.Checks = append(out.Checks, p.tokenize(ctx)...)
	streams := p.stream(ctx)
	out.Checks = append(out.Checks, streams...)
	if streams[0].Result != OK {
		out.Checks = append(out.Checks, Check{Name: "cache reset", Result: Skipped, Detail: "no request streams to prove it with"})
		return out
	}
	out.Checks = append(out.Checks, p.cacheReset(ctx))
	return out
}
