package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// t0 is a fixed start time, so that folders and reports are deterministic.
var t0 = time.Date(2026, 11, 29, 8, 12, 0, 0, time.UTC)

// dist describes the distribution a config's requests are drawn from: lognormal latencies with
// the given medians and spread (σ in log space), a fixed number of tokens, one per event.
type dist struct {
	ttft, tpot float64 // medians in milliseconds
	spread     float64
	tokens     int
	fail       int // how many measured requests fail (the first ones)
}

var baseDist = dist{ttft: 40, tpot: 8, spread: 0.1, tokens: 64}

// testConfigs returns configs with the given labels, each on the one server s0; their ids are
// derived from the labels.
func testConfigs(reps int, labels ...string) []experiment.Config {
	var cs []experiment.Config
	for i, l := range labels {
		cs = append(cs, experiment.Config{ID: "id-" + l, ServerID: "s0", Label: l, Index: i,
			Axes:    []experiment.AxisValue{{Path: "request.max_tokens", Value: l}},
			Server:  experiment.Server{Engine: "vllm", Model: "org/tiny", Dtype: "half"},
			Request: experiment.Request{API: "chat", PromptTokens: 32, MaxTokens: 64}, Repetitions: reps, Warmup: 1, Cache: "reset"})
	}
	return cs
}

// env is what a test folder records about its server and machine.
type env struct {
	engineVersion string
	argv          []string
	gpu           string
	runner        string
}

var baseEnv = env{engineVersion: "0.6.3", gpu: "Tesla T4", runner: "0.1.0",
	argv: []string{"/usr/local/bin/vllm", "serve", "org/tiny", "--dtype", "half", "--host", "127.0.0.1", "--port", "41234"}}

// request draws one request of config c: seq 0 is the first request after boot, seq 1 a warm-up,
// the rest measured.
func request(d resultstest.Draw, dist dist) record.Request {
	c, seq, ms := d.Config, d.Seq, resultstest.Ms
	phase, rep := d.Phase()
	q := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: rep,
		Start: t0.Add(time.Duration(seq) * time.Second), MaxTokens: c.Request.MaxTokens, Cache: "reset"}
	if phase == record.PhaseMeasure && rep < dist.fail {
		q.Status, q.ErrorClass, q.Error = record.StatusFailed, record.ErrTimeout, "deadline exceeded"
		return q
	}
	ttft := dist.ttft * math.Exp(dist.spread*d.Rand.NormFloat64())
	tpot := dist.tpot * math.Exp(dist.spread*d.Rand.NormFloat64())
	n := dist.tokens
	q.Status, q.HTTPStatus = record.StatusOK, 200
	q.TTFT, q.TPOTEvent, q.TPOTToken, q.ITLMedian = ms(ttft), ms(tpot), ms(tpot), ms(tpot)
	q.TPOTTokenExact = true
	q.LastText = ms(ttft + tpot*float64(n-1))
	q.E2E = ms(ttft + tpot*float64(n-1) + 0.5)
	q.Events, q.TextEvents = n+2, n
	q.OutputTokens, q.TokensFromUsage, q.TokenSource = record.Int(n), record.Int(n), record.SourceUsageCont
	return q
}

// sideSpec describes one side of a comparison.
type sideSpec struct {
	dir     string
	configs []experiment.Config
	dists   map[string]dist // by label; baseDist when absent
	env     env
	seed    uint64
}

func (s sideSpec) manifest() *results.Manifest {
	return &results.Manifest{SchemaVersion: results.FormatVersion, Status: results.StatusComplete,
		Runner:     results.RunnerInfo{Version: s.env.runner},
		Experiment: results.ExperimentFile{Name: "diff-test", SHA256: results.SHA256([]byte("diff-test"))},
		Configs:    s.configs, Servers: []results.ServerInfo{s.server()}, Machine: s.machine(), Start: t0}
}

func (s sideSpec) server() results.ServerInfo {
	return results.ServerInfo{ServerID: "s0", Engine: "vllm", EngineVersion: s.env.engineVersion, Model: "org/tiny",
		Argv: s.env.argv, BootStart: t0, ExitSignal: "terminated"}
}

func (s sideSpec) machine() results.Machine {
	m := results.Machine{Hostname: "bench", Arch: "linux/amd64", CPU: "AMD EPYC 7B13", CPUs: 8}
	if s.env.gpu != "" {
		m.GPUs = []results.GPU{{Index: 0, Name: s.env.gpu, Driver: "535.104.05", MemoryMiB: 15360}}
	}
	return m
}

// builder returns the side's folder: each config has a first request, one warm-up and its
// measured requests, drawn from its distribution.
func (s sideSpec) builder() *resultstest.Builder {
	m := s.machine()
	return &resultstest.Builder{
		Experiment: &experiment.Experiment{Version: 1, Name: "diff-test", Source: []byte("diff-test")},
		Configs:    s.configs,
		Run:        results.RunInfo{RunnerVersion: s.env.runner, Start: t0, Machine: &m},
		Servers:    []results.ServerInfo{s.server()},
		Seed:       [2]uint64{s.seed, 99},
		Requests:   func(c experiment.Config) int { return 2 + c.Repetitions },
		Request: func(d resultstest.Draw) record.Request {
			dist, ok := s.dists[d.Config.Label]
			if !ok {
				dist = baseDist
			}
			return request(d, dist)
		},
	}
}

// memory builds the side in memory, without a folder.
func (s sideSpec) memory() *Side {
	return &Side{Dir: s.dir, Manifest: s.manifest(), Status: results.StatusComplete, Requests: s.builder().Records()}
}

// write writes the side as a result folder under root with the results package's writer and
// returns its path.
func (s sideSpec) write(t *testing.T, root string) string {
	t.Helper()
	return s.builder().Write(t, root)
}

// row returns the report's row of a config label and metric.
func row(t *testing.T, rep *Report, label, metric string) Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Label == label && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s %s", label, metric)
	return Row{}
}

func mustCompare(t *testing.T, old, new *Side, opt Options) *Report {
	t.Helper()
	rep, err := Compare(old, new, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustThresholds(t *testing.T, s string) []Threshold {
	t.Helper()
	ts, err := ParseThresholds(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func label(i int) string { return fmt.Sprintf("max_tokens=%d", 64<<i) }
