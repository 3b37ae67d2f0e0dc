package results_test

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

var synthRoot = flag.String("synth", "", "also write the synthetic result folder under this directory, with columns.json "+
	"beside it, for .ci/check_csv_types.py")

// TestSyntheticFolder writes a folder that exercises every column (missing values, failures,
// a server that would not boot, estimated token counts), reads it back, and checks that each
// column holds at least one value, so that a type check on the folder checks every column.
// With -synth DIR it writes the folder under DIR and DIR/columns.json, which lists each file's
// columns and kinds for the type check in .ci/.
func TestSyntheticFolder(t *testing.T) {
	root := *synthRoot
	if root == "" {
		root = t.TempDir()
	}
	exp, configs := results.TestExperiment()
	exp.Name = "synthetic"
	// Three axes of three types, and a third config on a server that fails to boot.
	for i := range configs {
		configs[i].Axes = append(configs[i].Axes, experiment.AxisValue{Path: "server.dtype", Value: "half"},
			experiment.AxisValue{Path: "request.temperature", Value: []string{"0.0", "0.7"}[i]})
	}
	broken := configs[1]
	broken.ID, broken.ServerID, broken.Index, broken.Label = "c2-0bad", "s1-dead", 2, "max_tokens=32,dtype=float"
	broken.Axes = []experiment.AxisValue{{Path: "request.max_tokens", Value: "32"}, {Path: "server.dtype", Value: "float"},
		{Path: "request.temperature", Value: "1.5"}}
	configs = append(configs, broken)
	// The second config is an open-loop load point with a cap and an SLO, so that the load
	// columns hold values.
	configs[1].Load = &experiment.LoadSpec{Rate: 5, Arrival: "poisson", Burstiness: 1, MaxConcurrency: 4, Seed: 7, Prompts: "distinct"}
	configs[1].SLO = []experiment.Bound{{Metric: "ttft_ms", Max: 30}, {Metric: "e2e_ms", Max: 200}}
	ready, t0 := 31.25, results.T0
	folder := &resultstest.Builder{
		Experiment: exp,
		Configs:    configs,
		Run:        results.TestRunInfo(),
		Servers: []results.ServerInfo{
			{ServerID: "s0-77aa", Engine: "vllm", EngineVersion: "0.6.3", Model: "tiny", BootStart: t0, BootSeconds: &ready,
				ExitSignal: "terminated", Shard: record.Int(1), Host: "gpu-node-7"},
			// The shard and host of each boot, as a merged folder records them.
			{ServerID: "s1-dead", Engine: "vllm", Model: "tiny", BootStart: t0.Add(time.Minute), ExitCode: record.Int(1),
				LogFile: "logs/s1-dead.log", Error: "CUDA out of memory", Shard: record.Int(0), Host: "gpu-node-3"},
		},
		Request: func(d resultstest.Draw) record.Request {
			c, seq := d.Config, d.Seq
			if c.ID == broken.ID {
				return record.Request{ConfigID: broken.ID, ServerID: broken.ServerID, Seq: seq, Phase: record.PhaseMeasure, Rep: seq,
					Start: t0.Add(time.Minute), Status: record.StatusFailed, ErrorClass: record.ErrServer,
					Error: "server s1-dead did not become ready", MaxTokens: 32, Cache: "reset"}
			}
			r := results.FakeRequest(c, seq)
			r.PromptBuilt = "server /tokenize"
			if c.Load != nil {
				ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
				r.LoadMode, r.Concurrency, r.Rate, r.InFlight = record.LoadOpen, c.Load.MaxConcurrency, c.Load.Rate, 1+seq%4
				r.Scheduled, r.SendLag, r.CapWait = ms(200*float64(seq)+0.25), ms(0.125+float64(seq%3)), ms(float64(seq%3))
			}
			if c.Index == 0 {
				clock, temp, throttled := 1980.0-float64(seq%3)*285, 61.0+float64(seq), seq%3 == 2
				r.GPUSMClockMeanMHz, r.GPUTempMaxC, r.GPUThrottled = &clock, &temp, &throttled
			}
			switch {
			case c.Index == 0 && seq == 3: // a connection that failed: no response at all
				r = results.FailedRequest(c, seq)
				r.ErrorClass, r.Error, r.HTTPStatus, r.FirstByte, r.WroteRequest = record.ErrConnect, "connection refused", 0, nil, nil
				r.PromptTokensReported, r.TiktokenEncoding, r.EventList, r.Events, r.TextEvents = nil, "", nil, 0, 0
			case c.Index == 0 && seq >= 4: // the server's /metrics said what it saw; seq 6 hit a cache the reset left
				ms := func(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }
				r.ServerTTFT, r.ServerE2E, r.ServerQueue = ms(20.5), ms(60.25), ms(0.125)
				r.ServerPrefill, r.ServerDecode = ms(20.25), ms(39.75)
				r.ServerPromptTokens, r.ServerGenerationTokens = record.Int(32), record.Int(c.Request.MaxTokens)
				r.PrefixCacheQueries, r.PrefixCacheHits = record.Int(32), record.Int(0)
				r.ClientOverhead = record.Dur(*r.TTFT - *r.ServerTTFT)
				r.CacheReset = true
				if seq == 6 {
					r.PrefixCacheHits, r.CacheHitAfterReset = record.Int(16), true
				}
			case c.Index == 1 && seq == 5: // no per-event counts: tpot_token estimated, ids counted
				r.TPOTTokenExact, r.TokenSource, r.ContinuousUsage = false, record.SourceUsage, false
				r.TokensFromIDs, r.TokensFromTokenize, r.ReturnTokenIDs = record.Int(c.Request.MaxTokens), record.Int(c.Request.MaxTokens), true
			}
			return r
		},
	}
	dir, want := folder.Write(t, root), folder.Records()

	got, err := results.ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("synthetic folder does not read back as written")
	}
	files := map[string][]results.Column{results.RequestsFile: results.RequestsCSV.Columns(), results.EventsFile: results.EventsCSV.Columns(), results.ServersFile: results.ServersCSV.Columns(),
		results.SummaryFile: results.SummaryCSV.Columns(), results.LoadFile: results.LoadCSV.ColumnsOf(nil), results.ConfigsFile: results.ConfigsCSV.ColumnsOf(results.ConfigRows(configs))}
	// Axis values are text in general; these three are an integer, a word and a decimal, and
	// the type check holds the folder to that.
	for i, c := range files[results.ConfigsFile] {
		switch c.Name {
		case "request_max_tokens":
			files[results.ConfigsFile][i].Kind = results.KindInt
		case "request_temperature":
			files[results.ConfigsFile][i].Kind = results.KindFloat
		}
	}
	for name, cols := range files {
		assertEveryColumnHasAValue(t, filepath.Join(dir, name), cols)
	}
	if *synthRoot == "" {
		return
	}
	rel, _ := filepath.Rel(root, dir)
	spec := struct {
		Folder string                      `json:"folder"`
		Files  map[string][]results.Column `json:"files"`
	}{Folder: filepath.ToSlash(rel), Files: files}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "columns.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s and %s", dir, filepath.Join(root, "columns.json"))
}

// assertEveryColumnHasAValue fails if a column of the CSV file at path is empty in every row,
// or if the header is not cols.
func assertEveryColumnHasAValue(t *testing.T, path string, cols []results.Column) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	recs, err := csv.NewReader(file).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 || len(recs[0]) != len(cols) {
		t.Fatalf("%s: %d rows of %d columns, want %d columns", path, len(recs), len(recs[0]), len(cols))
	}
	for i, c := range cols {
		if recs[0][i] != c.Name {
			t.Errorf("%s: column %d is %s, want %s", path, i, recs[0][i], c.Name)
		}
		has := false
		for _, r := range recs[1:] {
			has = has || r[i] != ""
		}
		if !has {
			t.Errorf("%s: column %s is empty in every row", filepath.Base(path), c.Name)
		}
	}
}
