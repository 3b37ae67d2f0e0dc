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

Formats: text, an aligned table; json, one object with "configs", "servers" and "totals"; csv,
one row per config with a header row. The json and csv field names are stable.`

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
	enc, err := plan.NewEncoder(*format, stdout)
	if err != nil {
		return usageError("plan: %v", err)
	}
	e, cfgs, err := loadExperiment("plan", files[0])
	if err != nil {
		return err
	}
	return enc.Encode(plan.New(e, cfgs))
}
