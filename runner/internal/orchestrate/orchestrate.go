// Package orchestrate runs the matrix: for each distinct server config it boots the server once,
// prepares the prompts, sends every request of that server's configs in the experiment's order,
// and stops the server before the next one boots. It reports what happens as typed events
// (events.go) to its subscribers: the result folder records the requests and servers (Record),
// the progress display shows them.
//
// Run, in this file, groups the configs by server config; server.go runs one server (its boot,
// the clients that talk to it, its prompts, its end); requests.go sends its requests in order
// and records them, and load.go runs a load point as one block.
package orchestrate

import (
	"context"
	"io"
	"iter"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/measure"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/telemetry"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// Options is everything a run needs.
type Options struct {
	Experiment *experiment.Experiment
	Configs    []experiment.Config
	// Subscribers receive the run's events, in this order. Put the one that records the rows
	// (Record) first, so that a request it cannot record is reported nowhere else.
	Subscribers []Subscriber
	// Logs opens where the output of a server goes, for each server config the run boots or
	// connects to, with the name that messages call it by (a path); the run closes it once the
	// server has ended. Nil discards the servers' output.
	Logs func(serverID string) (w io.WriteCloser, name string, err error)
	// Done holds the requests a resumed folder already has; they are not sent again.
	Done results.Done
	// Executable is the runner's own executable, which engine sim runs; empty means
	// os.Executable().
	Executable string
	// StopTimeout bounds how long stopping a server may take once the run is over or
	// interrupted.
	StopTimeout time.Duration
	// StopGrace is how long a booted server gets to exit after SIGTERM before SIGKILL; 0
	// means engine.DefaultStopGrace.
	StopGrace time.Duration
	// Telemetry configures the GPU sampler run beside each server the run boots (its
	// ServerID and ProcessGroup are filled in per server); the zero value samples with the
	// nvidia-smi on the PATH, where there is one. NoTelemetry turns sampling off.
	Telemetry   telemetry.Options
	NoTelemetry bool
}

// Outcome counts what a run did.
type Outcome struct {
	Sent        int // requests sent and recorded
	Failed      int // of which failed
	Skipped     int // already in the folder (resume)
	BootFailed  int // server configs that could not be booted
	Interrupted bool
}

// Run runs every config, server by server. It returns an error only when the run cannot go
// on at all (the folder cannot be written, the run was interrupted); a server that fails to
// boot or a request that fails is recorded and the run goes on.
func Run(ctx context.Context, o Options) (Outcome, error) {
	var out Outcome
	if o.StopTimeout == 0 {
		o.StopTimeout = 2 * time.Minute
	}
	groups := groupByServer(o.Configs)
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		return out, err // it names the encoding it failed to load
	}
	total := 0
	for _, g := range groups {
		pending := sum(g.left(o.Done))
		out.Skipped += experiment.Requests(g.configs) - pending
		total = experiment.AddSat(total, pending)
	}
	subs := subscribers(o.Subscribers)
	subs.tell(RunStarted{Requests: total, Servers: len(groups), Skipped: out.Skipped})

	for gi, g := range groups {
		if err := ctx.Err(); err != nil {
			out.Interrupted = true
			return out, err
		}
		if err := runServer(ctx, o, gi, len(groups), g, tk, &out); err != nil {
			if ctx.Err() != nil {
				out.Interrupted = true
			}
			return out, err
		}
	}
	subs.tell(RunFinished{})
	return out, nil
}

// group is the configs that share one server config, in expansion order.
type group struct {
	serverID string
	server   experiment.Server
	configs  []experiment.Config
}

func groupByServer(configs []experiment.Config) []group {
	var groups []group
	index := map[string]int{}
	for _, c := range configs {
		i, ok := index[c.ServerID]
		if !ok {
			i = len(groups)
			index[c.ServerID] = i
			groups = append(groups, group{serverID: c.ServerID, server: c.Server})
		}
		groups[i].configs = append(groups[i].configs, c)
	}
	return groups
}

// counts returns how many warm-up and measured requests each of the group's configs gets.
func (g group) counts() []measure.Counts {
	counts := make([]measure.Counts, len(g.configs))
	for i, c := range g.configs {
		counts[i] = measure.Counts{Warmup: c.Warmup, Repetitions: c.Repetitions}
	}
	return counts
}

// jobs returns the group's requests in the order they are sent, generated as they are consumed.
func (g group) jobs(exp *experiment.Experiment) iter.Seq[measure.Job] {
	if g.underLoad() {
		return g.loadJobs()
	}
	return measure.Schedule(g.counts(), exp.Order.Mode, exp.Order.Seed)
}

// left returns, for each of the group's configs, how many of its requests the folder does not
// hold yet. The schedule sends the group's first request for its first config.
func (g group) left(done results.Done) []int {
	left := make([]int, len(g.configs))
	for i, c := range g.configs {
		n := configRequests(c)
		if i == 0 {
			n = experiment.AddSat(n, 1)
		}
		left[i] = max(n-done.Count(c.ID), 0)
	}
	return left
}

// configRequests returns a config's warm-up and measured requests: its whole load point, when
// it has a load.
func configRequests(c experiment.Config) int {
	return experiment.AddSat(max(c.Warmup, 0), max(c.Repetitions, 0))
}

// sum adds counts that validation bounds (experiment.MaxRequests), saturating all the same.
func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total = experiment.AddSat(total, x)
	}
	return total
}

// pending returns the group's requests that the folder does not hold yet, in the order they
// are sent.
func (g group) pending(o Options) iter.Seq[measure.Job] {
	return func(yield func(measure.Job) bool) {
		for j := range g.jobs(o.Experiment) {
			if !o.Done.Has(g.configs[j.Config].ID, j.Seq) && !yield(j) {
				return
			}
		}
	}
}
