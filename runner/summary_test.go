package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
	"github.com/onelayerdown/runner/runner/internal/summary"
)

// summaryFixture writes a deterministic result folder under root: two configs on one server,
// each with a first request, one warm-up and `reps` measured requests, the second config with
// one timeout. With interrupt set it stops after the first config, as a killed run does.
func summaryFixture(t *testing.T, root string, reps int, interrupt bool) string {
	t.Helper()
	var configs []experiment.Config
	for i, mt := range []int{64, 256} {
		configs = append(configs, experiment.Config{ID: fmt.Sprintf("cfg%d", i), ServerID: "srv0", Index: i,
			Label: fmt.Sprintf("max_tokens=%d", mt), Axes: []experiment.AxisValue{{Path: "request.max_tokens", Value: fmt.Sprint(mt)}},
			Request: experiment.Request{MaxTokens: mt}, Repetitions: reps, Warmup: 1})
	}
	b := &resultstest.Builder{
		Experiment: resultstest.Experiment("summary-fixture"),
		Configs:    configs,
		Run:        results.RunInfo{RunnerVersion: "test", Machine: &results.Machine{Arch: "linux/amd64"}},
		Request: func(d resultstest.Draw) record.Request {
			ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
			c, seq := d.Config, d.Seq
			phase, _ := d.Phase()
			n := c.Request.MaxTokens
			start := resultstest.Start.Add(time.Duration(seq) * time.Second)
			if c.Index == 1 && seq == 3 {
				return record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Status: record.StatusFailed,
					ErrorClass: record.ErrTimeout, Error: "deadline exceeded", Start: start, MaxTokens: n}
			}
			ttft := 40 + float64(c.Index)*25 + float64((seq*7)%5)*1.5
			tpot := 8 + float64((seq*3)%4)*0.25
			return record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Status: record.StatusOK,
				Start: start, HTTPStatus: 200, TTFT: ms(ttft),
				E2E: ms(ttft + tpot*float64(n-1)), TPOTEvent: ms(tpot), TPOTToken: ms(tpot), TPOTTokenExact: true,
				ITLMedian: ms(tpot), TextEvents: n, OutputTokens: record.Int(n), TokenSource: record.SourceUsage, MaxTokens: n}
		},
	}
	if !interrupt {
		return b.Write(t, root)
	}
	// Leave the folder as a run killed in the middle of a write would: the first config's
	// rows, a torn last line, a manifest that says running, and no live writer.
	b.Requests = func(c experiment.Config) int { return (1 - c.Index) * (2 + reps) }
	b.Status = results.StatusRunning
	dir := b.Write(t, root)
	req, err := os.OpenFile(filepath.Join(dir, "requests.csv"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	req.WriteString("1,cfg1-0,cfg1,srv0,0,fi")
	req.Close()
	return dir
}

func TestSummaryGolden(t *testing.T) {
	dir := summaryFixture(t, t.TempDir(), 6, false)
	for _, format := range summary.Formats() {
		t.Run(format, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, "summary", dir, "--format", format)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			checkGolden(t, filepath.Join("testdata", "summary", format+".golden"), []byte(stdout))
		})
	}
}

func TestSummaryFormatsAgree(t *testing.T) {
	dir := summaryFixture(t, t.TempDir(), 6, false)
	stdout, _, code := runCmd(t, "summary", "--format=json", dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var js struct {
		Rows []struct {
			Label, Metric string
			N             int
			Median        *float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatal(err)
	}
	csvOut, _, _ := runCmd(t, "summary", dir, "--format", "csv")
	s := results.SummaryCSV.NewScanner(strings.NewReader(csvOut), "stdout")
	i := 0
	for ; s.Scan(); i++ {
		r := s.Record()
		if i >= len(js.Rows) || js.Rows[i].Metric != r.Metric || js.Rows[i].N != r.N || *js.Rows[i].Median != r.Median {
			t.Fatalf("csv row %d (%s %s) differs from json", i, r.Label, r.Metric)
		}
	}
	if s.Err() != nil || i != len(js.Rows) || i != 2*plainMetrics() {
		t.Errorf("csv rows %d, json rows %d: %v", i, len(js.Rows), s.Err())
	}
	stored, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil || string(stored) != csvOut {
		t.Errorf("--format csv differs from the folder's summary.csv (%v)", err)
	}
}

func TestSummaryInterruptedFolder(t *testing.T) {
	dir := summaryFixture(t, t.TempDir(), 6, true)
	stdout, stderr, code := runCmd(t, "summary", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "status interrupted, 6 measured requests (0 failed)") {
		t.Errorf("headline of an interrupted folder:\n%s", stdout)
	}
	if !strings.Contains(stderr, "requests.csv:10: skipped a torn last line") {
		t.Errorf("stderr does not mention the torn line: %q", stderr)
	}
	if !strings.Contains(stdout, "max_tokens=256") || !strings.Contains(stdout, "no samples") {
		t.Errorf("the config without requests is not shown as such:\n%s", stdout)
	}
}

func TestSummaryUsage(t *testing.T) {
	dir := summaryFixture(t, t.TempDir(), 3, false)
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "manifest.json"), []byte(`{"schema_version": 9, "status": "complete"}`), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"summary"}, 2, "want exactly one result folder, got 0"},
		{[]string{"summary", dir, dir}, 2, "want exactly one result folder, got 2"},
		{[]string{"summary", dir, "--format", "xml"}, 2, `unknown format "xml" (want text, markdown, csv, json)`},
		{[]string{"summary", t.TempDir()}, 2, "not a result folder"},
		{[]string{"summary", bad}, 2, "schema_version 9 is not supported: this runner reads version 1"},
		{[]string{"summary", "--help"}, 0, "Usage: runner summary RESULT_DIR"},
		{[]string{"summary", dir, "--format", "markdown"}, 0, "too few samples for a 95% median interval (need 6) (all metrics)"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", tt.args, code, stdout+stderr, tt.code, tt.want)
		}
	}
}

// plainMetrics counts the metrics that a config without load or server timings is summarised by.
func plainMetrics() int {
	n := 0
	for _, m := range results.Metrics() {
		if !m.LoadOnly() && !m.PresentOnly() {
			n++
		}
	}
	return n
}
