package main

import (
	"context"
	"io"

	"github.com/onelayerdown/runner/runner/internal/plan"
)

const planDescription = `
Show the configs an experiment file expands to, without running anything: for each config its
stable id, the id of the server config it runs on, its matrix axis values and the number of
requests it sends (warm-up + repetitions); then the totals: configs, server boots and requests,
which count one extra first request per server (sent right after it starts, kept apart from the
steady state).
Configs with the same server id share one server, booted once. The file is checked as by
'runner validate' first; an invalid file exits with status 2.

With --shards N it also shows how 'runner FILE --shard I/N' splits the plan over N machines:
each shard's server configs, configs and requests. A server config is never split (its configs
share one boot); the server configs, largest first, each go to the shard with the fewest
requests so far (longest processing time first; ties by plan order, then the lowest shard), so
every machine computes the same split, and the busiest shard sends at most 4/3 of what the
best split's busiest would.

Formats: text, an aligned table; json, one object with "configs", "servers" and "totals"; csv,
one row per config with a header row. The json and csv field names are stable. With --shards,
json adds "shards" (index, servers, configs, requests) and csv adds the columns shard and
shard_requests.`

// cmdPlan prints the configs of an experiment file and what running it will cost.
func cmdPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", "runner plan FILE [--shards N] [--format text|json|csv]", planDescription, stderr)
	format := fs.String("format", "text", "output format: "+orList(plan.Formats()))
	shards := fs.Int("shards", 0, "show how `N` shards (runner FILE --shard I/N) split the plan")
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError("want exactly one experiment file, got %d (usage: runner plan FILE [--shards N] [--format text|json|csv])", len(files))
	}
	if *shards != 0 || flagSet(fs, "shards") {
		if err := plan.CheckCount(*shards); err != nil {
			return usageError("--shards %d: %w", *shards, err)
		}
	}
	enc, err := plan.NewEncoder(*format, stdout)
	if err != nil {
		return usageError("%w", err)
	}
	e, cfgs, err := readExperiment(files[0])
	if err != nil {
		return err
	}
	p := plan.New(e, cfgs)
	if *shards > 0 {
		if err := p.Split(cfgs, *shards); err != nil {
			return usageError("--shards %d: %w", *shards, err)
		}
	}
	return enc.Encode(p)
}
