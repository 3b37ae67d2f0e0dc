package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/compare"
)

const diffDescription = `
Compare two result folders, OLD (the baseline) and NEW, config by config and metric by metric.

Configs are joined by their stable id (--join label joins them by their axis values instead);
configs on one side only are listed and not compared. For each metric (ttft_ms, tpot_event_ms,
tpot_token_ms, e2e_ms, itl_median_ms, output_tokens, text_events) of each config on both sides,
over the successful measured requests (warm-up and first requests left out, as in summary), it
shows the old and new medians with 95% distribution-free confidence intervals, the change of the
median in percent, the p-value of a two-sided Mann-Whitney U test of the two samples, and n as
old+new. The change column is "~" when p is not below --alpha: no significant change. The p-value
is exact (by the null distribution of U) when no value is tied and both sides have fewer than 50
values, and from the normal approximation with tie and continuity corrections otherwise.

Warnings say when n is too small to detect a change (even samples that do not overlap at all
would not reach --alpha: at 0.05 that needs 4 values a side), when a side has no values or
failed requests, and when output_tokens or text_events changed significantly (the requests are
then a different experiment). The environments are compared (format version, engine, engine
version, model, dtype, GPU, GPU driver, server command line without its port): any difference
is shown loudly, since the folders are then different experiments.

The gate. --fail-on takes METRIC:LIMIT rules, comma-separated or repeated, e.g.
  --fail-on ttft:+10%,tpot_token:+5%
METRIC is a metric name with or without _ms (ttft or ttft_ms). LIMIT is +N% (fail when the
metric's median grew by more than N%), -N% (shrank by more than N%), or ±N% / +-N% (either); a
bare N% is +N%. A rule fails when, for any config on both sides, the change is significant
(p < alpha) AND the percent change of the median, (new - old) / old, is beyond the limit (a
change of exactly N% passes). For durations larger is worse, so +N% is the usual rule; for
token counts, whose change means the experiment changed, use ±N% if you gate them at all.

A run that measured nothing cannot pass: a gated metric that has values in OLD and none in NEW
(every request of the config failed: the server did not boot, or answered 500), or a config of
OLD that NEW lacks, fails the gate. --allow-missing reports these and lets them pass. The rule
failed:+N% gates the share of failed measured requests itself, in percentage points: it fails a
config whose failed share grew by more than N points (2 of 10 failed, was 0 of 10: +20 points);
a config of NEW without measured requests counts as all failed.

A gated metric that cannot be tested for another reason (too few values to reach alpha, or no
values in OLD) is reported as untestable and does not fail, unless --strict is given. --strict
also fails on a difference in the environment, a config on one side only, and a significant
change of output_tokens or text_events.

Exit status: 0 when the gate passes (or has no rules), 1 when it fails (the report is still
printed, the reasons at its end and on stderr), 2 on bad input: bad flags, a folder that is
not a result folder, or a folder of a format version this runner does not read.

Formats: text, an aligned table for a terminal; markdown, for a pull-request comment or
$GITHUB_STEP_SUMMARY; csv, one row per config and metric (configs on one side only included);
json, everything (folders, environment, rows, gate).`

// failOnFlag collects --fail-on values; the flag may be repeated.
type failOnFlag []string

func (f *failOnFlag) String() string { return strings.Join(*f, ",") }

func (f *failOnFlag) Set(s string) error {
	*f = append(*f, s)
	return nil
}

// cmdDiff compares two result folders and gates on regressions.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "runner diff OLD_DIR NEW_DIR [--format text|markdown|csv|json] [--alpha 0.05] [--fail-on METRIC:+N%,...] [--strict] [--allow-missing] [--join id|label] [--wide]"
	fs := newFlagSet("diff", synopsis, diffDescription, stderr)
	format := fs.String("format", "text", "output format: "+strings.Join(compare.Formats(), ", "))
	wide := fs.Bool("wide", false, "text: show each median's confidence interval, in a table wider than 100 columns")
	alpha := fs.Float64("alpha", compare.DefaultAlpha, "significance level of the Mann-Whitney U test, in (0, 1)")
	var failOn failOnFlag
	fs.Var(&failOn, "fail-on", "gate rules METRIC:LIMIT, e.g. ttft:+10%,tpot_token:+5% (repeatable; see above)")
	strict := fs.Bool("strict", false, "also fail on differing environments, one-sided configs, untestable gated metrics and changed token counts")
	allowMissing := fs.Bool("allow-missing", false, "do not fail when a gated metric has no values in NEW (every request failed) or a config of OLD is missing from NEW")
	join := fs.String("join", string(compare.ByID), "join configs by id or by label")
	dirs, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(dirs) != 2 {
		return usageError("want two result folders, OLD and NEW, got %d (usage: %s)", len(dirs), synopsis)
	}
	if !(*alpha > 0 && *alpha < 1) {
		return usageError("--alpha %s: want a number between 0 and 1", strconv.FormatFloat(*alpha, 'g', -1, 64))
	}
	if *join != string(compare.ByID) && *join != string(compare.ByLabel) {
		return usageError("--join %q: want id or label", *join)
	}
	var thresholds []compare.Threshold
	for _, v := range failOn {
		ts, err := compare.ParseThresholds(v)
		if err != nil {
			return usageError("--fail-on: %w", err)
		}
		thresholds = append(thresholds, ts...)
	}
	enc, err := compare.NewEncoder(*format, stdout)
	if err != nil {
		return usageError("--format: %w", err)
	}
	if t, ok := enc.(*compare.TextEncoder); ok {
		t.Wide(*wide)
	}

	var sides [2]*compare.Side
	for i, dir := range dirs {
		if sides[i], err = compare.Read(dir); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	rep, err := compare.Compare(sides[0], sides[1], compare.Options{Alpha: *alpha, Thresholds: thresholds,
		Strict: *strict, AllowMissing: *allowMissing, JoinBy: compare.JoinBy(*join)})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if rep.Gate.Failed() {
		return &exitError{code: 1, err: errors.New("regression: " + strings.Join(rep.Gate.Reasons, "; "))}
	}
	return nil
}
