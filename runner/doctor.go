package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/onelayerdown/runner/runner/internal/doctor"
)

const doctorDescription = `
Check, in about a minute, that this install of the experiment's engines behaves as the runner
relies on: each distinct server config is booted once (or connected to, for engine: endpoint)
and tried for readiness; its version; max_model_len as the server reports it against the
experiment's; /tokenize in each form the runner sends (a prompt with and without special
tokens, chat messages) and usage.prompt_tokens; a streamed request with continuous_usage_stats
and return_token_ids; the prefix cache reset, proved by a repeated prompt that hits the cache
before the reset and not after it (from the /metrics prefix-cache counters); every /metrics
name the runner reads; and the server-side TTFT histogram moving by exactly one per request.
Where nvidia-smi is found it checks that its samples arrive as they are taken when piped, that
their timestamps parse and match the clock, and which name the throttle reasons go by.

It prints one table: each check, its result (ok, missing, failed, unverified, skipped), what was
found, and what the runner will do without it. --format json writes the same as one JSON
object; --json FILE writes that object to FILE as well, whatever stdout gets.

Exit status: 0 when everything the experiment needs is there (optional things may be missing:
their rows say what the run loses), 1 when something it needs is missing (a server that does
not become ready, a failed stream, max_model_len other than the experiment's, cache: reset
without a reset, or a reset that leaves the cache full), 2 on a usage error or an invalid file.`

// cmdDoctor checks that the servers of an experiment behave as the runner relies on.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "runner doctor FILE [--format text|json] [--json FILE] [--no-telemetry] [--stop-grace D]"
	fs := newFlagSet("doctor", synopsis, doctorDescription, stderr)
	format := fs.String("format", "text", "output format: "+orList(doctor.Formats()))
	jsonFile := fs.String("json", "", "also write the report as JSON to `FILE`")
	noTelemetry := fs.Bool("no-telemetry", false, "leave the GPU telemetry (nvidia-smi) unchecked")
	stopGrace := fs.Duration("stop-grace", 0, "how long a booted server gets to exit after SIGTERM (0: the engine's default)")
	files, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError("want exactly one experiment file, got %d (usage: %s)", len(files), synopsis)
	}
	if *stopGrace < 0 {
		return usageError("--stop-grace %s: want a duration of zero or more", *stopGrace)
	}
	enc, err := doctor.NewEncoder(*format, stdout)
	if err != nil {
		return usageError("%w", err)
	}
	e, cfgs, err := readExperiment(files[0])
	if err != nil {
		return err
	}
	r, err := doctor.Run(ctx, e, cfgs, doctor.Options{Progress: stderr, NoTelemetry: *noTelemetry, StopGrace: *stopGrace})
	if err != nil {
		return err
	}
	if *jsonFile != "" {
		var b bytes.Buffer
		if err := doctor.NewJSONEncoder(&b).Encode(r); err != nil {
			return err
		}
		if err := os.WriteFile(*jsonFile, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if err := enc.Encode(r); err != nil {
		return err
	}
	if r.Failed() {
		return &exitError{code: 1}
	}
	return nil
}
