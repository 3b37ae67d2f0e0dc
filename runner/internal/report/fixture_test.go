package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

var update = flag.Bool("update", false, "regenerate the result folders under testdata/ from fixtureModels")

// fixtureModel is the latency model a synthetic result folder is drawn from. The streams have
// the shape of vLLM's completions stream with continuous usage stats: every text event says
// how many tokens it carried, the first carries one, and a usage-only chunk without text ends
// the stream. With multi-step scheduling (vLLM's --num-scheduler-steps) one event may carry
// several tokens, which is what chunk describes.
type fixtureModel struct {
	dir           string // folder name under testdata/
	engineVersion string
	args          []string  // extra server arguments, which also change the config ids
	prompts       []int     // request.prompt_tokens axis
	outputs       []int     // request.max_tokens axis
	a, b          float64   // TTFT = a + b·prompt tokens (ms)
	c0, cp        float64   // time per output token = c0 + cp·prompt tokens (ms)
	chunk         []float64 // probability that an event after the first carries 1, 2, 3, ... tokens
	fail          [2]int    // a failed measured request: config index and seq (seq 0 for none)
	noEventTokens bool      // the server says only the total (final usage), not what each event carried
	seed          uint64
}

// wantC is the decode coefficient a fit should find: the line through the origin over a
// balanced design weighs every prompt length alike, so c is the per-token time at the mean
// prompt length.
func (m fixtureModel) wantC() float64 {
	var s float64
	for _, p := range m.prompts {
		s += float64(p)
	}
	return m.c0 + m.cp*s/float64(len(m.prompts))
}

// fixtureModels are the committed folders: an older server with one token per event and a
// newer one, faster, with multi-step scheduling.
var fixtureModels = []fixtureModel{
	{dir: "old", engineVersion: "0.6.1", prompts: []int{64, 256, 512}, outputs: []int{16, 64},
		a: 24, b: 0.072, c0: 11.5, cp: 0.004, chunk: []float64{1}, seed: 101},
	{dir: "new", engineVersion: "0.6.3", args: []string{"--num-scheduler-steps", "4"}, prompts: []int{64, 256, 512},
		outputs: []int{16, 64}, a: 16, b: 0.05, c0: 9.5, cp: 0.003, chunk: []float64{0.45, 0.3, 0.17, 0.08},
		fail: [2]int{4, 5}, seed: 202},
}

// fixtureStart is the fixed start time of every fixture run.
var fixtureStart = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

func (m fixtureModel) source() []byte {
	var b strings.Builder
	b.WriteString("# yaml-language-server: $schema=../schema/experiment.schema.json\nversion: 1\nname: report-fixture\n")
	b.WriteString("description: TTFT against prompt length and TPOT against output length (a synthetic folder for report tests)\n")
	b.WriteString("server:\n  engine: vllm\n  model: TinyLlama/TinyLlama-1.1B-Chat-v1.0\n  dtype: half\n  max_model_len: 1024\n")
	if len(m.args) > 0 {
		fmt.Fprintf(&b, "  args: [%s]\n", strings.Join(quoteAll(m.args), ", "))
	}
	b.WriteString("request:\n  api: completions\n  ignore_eos: true\n")
	fmt.Fprintf(&b, "matrix:\n  request.prompt_tokens: [%s]\n  request.max_tokens: [%s]\n", joinInts(m.prompts), joinInts(m.outputs))
	b.WriteString("warmup: 1\nrepetitions: 6\ncache: reset\n")
	return []byte(b.String())
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func joinInts(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

// usec rounds milliseconds to whole microseconds.
func usec(x float64) time.Duration { return time.Duration(math.Round(x*1000)) * time.Microsecond }

// writeFixture writes the folder of model m under root with the results package's writer and
// returns its path.
func writeFixture(t testing.TB, root string, m fixtureModel) string {
	t.Helper()
	exp, err := experiment.Parse("experiments/report-fixture.yaml", m.source())
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	machine := results.Machine{Hostname: "bench-1", OS: "Debian GNU/Linux 12 (bookworm)", Arch: "linux/amd64", CPU: "Intel Xeon",
		CPUs: 8, MemoryBytes: 32 << 30, GPUs: []results.GPU{{Index: 0, Name: "Tesla T4", Driver: "550.54.15", MemoryMiB: 15360}}}
	f, err := results.Create(root, exp, configs, results.RunInfo{RunnerVersion: "0.1.0", RunnerCommit: "fixture",
		Command: []string{"runner", "experiments/report-fixture.yaml"}, Start: fixtureStart, Machine: &machine})
	if err != nil {
		t.Fatal(err)
	}
	serverID := configs[0].ServerID
	log, _, err := f.ServerLog(serverID)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(log, "INFO: vLLM API server version %s\nINFO: Started server process\nINFO: Application startup complete.\n", m.engineVersion)
	log.Close()
	boot := 41.5
	argv := append([]string{"vllm", "serve", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--dtype", "half", "--max-model-len", "1024",
		"--host", "127.0.0.1", "--port", "8000"}, m.args...)
	if err := f.SetServer(results.ServerInfo{ServerID: serverID, Engine: "vllm", EngineVersion: m.engineVersion,
		Model: "TinyLlama/TinyLlama-1.1B-Chat-v1.0", Argv: argv, BootStart: fixtureStart, BootSeconds: &boot}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(m.seed, 7))
	clock := fixtureStart.Add(45 * time.Second)
	for _, c := range configs {
		for seq := 0; seq < 1+c.Warmup+c.Repetitions; seq++ {
			r := m.request(rng, c, seq, clock)
			clock = clock.Add(2 * time.Second)
			if err := f.Append(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	exit := 0
	if err := f.SetServer(results.ServerInfo{ServerID: serverID, Engine: "vllm", EngineVersion: m.engineVersion,
		Model: "TinyLlama/TinyLlama-1.1B-Chat-v1.0", Argv: argv, BootStart: fixtureStart, BootSeconds: &boot, ExitCode: &exit}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	return f.Dir()
}

var fixtureWords = strings.Fields("the cache keeps keys and values of every token so that the next step reads them instead of computing them again")

// request draws one request of config c from the model.
func (m fixtureModel) request(rng *rand.Rand, c experiment.Config, seq int, start time.Time) record.Request {
	phase, rep := record.PhaseMeasure, seq-1-c.Warmup
	switch {
	case seq == 0:
		phase, rep = record.PhaseFirst, 0
	case seq <= c.Warmup:
		phase, rep = record.PhaseWarmup, seq-1
	}
	p, o := c.Request.PromptTokens, c.Request.MaxTokens
	r := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: rep, Start: start,
		HTTPStatus: 200, ConnReused: seq > 0, WroteRequest: record.Dur(usec(0.15)), FirstByte: record.Dur(usec(1.2 + 0.2*rng.Float64())),
		PromptTokensRequested: record.Int(p), MaxTokens: o, ContinuousUsage: true, Cache: "reset", CacheReset: true}
	if c.Index == m.fail[0] && seq == m.fail[1] && seq > 0 {
		r.Status, r.ErrorClass, r.Error = record.StatusFailed, record.ErrTruncated, "the stream ended without [DONE] after 12 events"
		return r
	}
	r.Status = record.StatusOK

	ttft := m.a + m.b*float64(p) + rng.NormFloat64()
	if rng.Float64() < 0.05 { // another request's prefill got scheduled first
		ttft += 6 + 4*rng.Float64()
	}
	switch phase {
	case record.PhaseFirst:
		ttft += 320 // lazy initialisation on the first request after boot
	case record.PhaseWarmup:
		ttft += 25
	}
	ttft = math.Max(ttft, 2)
	// Token k (1-based) is ready at times[k-1]; an event leaves with its last token.
	per := m.c0 + m.cp*float64(p)
	times := []float64{ttft}
	for k := 2; k <= o; k++ {
		times = append(times, times[k-2]+per*math.Max(0.3, 1+0.07*rng.NormFloat64()))
	}
	var text strings.Builder
	addEvent := func(tokens int, at float64) {
		n := 0
		for range tokens {
			w := fixtureWords[rng.IntN(len(fixtureWords))]
			text.WriteString(" " + w)
			n += len(w) + 1
		}
		e := record.Event{Seq: len(r.EventList), SinceT0: usec(at), Bytes: 210 + n, TextLen: n, Text: true}
		if !m.noEventTokens {
			e.Tokens = record.Int(tokens)
		}
		r.EventList = append(r.EventList, e)
	}
	addEvent(1, times[0])
	for k := 1; k < o; {
		size := 1
		for u, acc := rng.Float64(), 0.0; size <= len(m.chunk); size++ {
			acc += m.chunk[size-1]
			if u < acc {
				break
			}
		}
		size = min(size, len(m.chunk), o-k)
		k += size
		addEvent(size, times[k-1])
	}
	last := times[o-1]
	r.EventList = append(r.EventList, record.Event{Seq: len(r.EventList), SinceT0: usec(last + 0.25), Bytes: 196})

	textEvents := len(r.EventList) - 1
	var gapsMs []float64
	for i := 1; i < textEvents; i++ {
		gapsMs = append(gapsMs, float64(r.EventList[i].SinceT0-r.EventList[i-1].SinceT0)/1e6)
	}
	sort.Float64s(gapsMs)
	first, lastT := r.EventList[0].SinceT0, r.EventList[textEvents-1].SinceT0
	r.TTFT, r.LastText, r.E2E = record.Dur(first), record.Dur(lastT), record.Dur(lastT+usec(0.4))
	if textEvents > 1 {
		r.TPOTEvent = record.Dur((lastT - first) / time.Duration(textEvents-1))
		r.TPOTToken = record.Dur((lastT - first) / time.Duration(o-1))
		r.TPOTTokenExact = true
		med := gapsMs[len(gapsMs)/2]
		if len(gapsMs)%2 == 0 {
			med = (gapsMs[len(gapsMs)/2-1] + med) / 2
		}
		r.ITLMedian, r.ITLMax = record.Dur(usec(med)), record.Dur(usec(gapsMs[len(gapsMs)-1]))
	}
	r.Events, r.TextEvents = len(r.EventList), textEvents
	r.OutputTokens, r.TokenSource, r.TokensFromUsage = record.Int(o), record.SourceUsageCont, record.Int(o)
	if m.noEventTokens {
		r.TokenSource, r.TPOTTokenExact, r.ContinuousUsage = record.SourceUsage, false, false
	}
	r.PromptTokensReported = record.Int(p)
	r.FinishReason = "length"
	r.OutputText = strings.TrimPrefix(text.String(), " ")
	return r
}

// normalizeManifest replaces what differs from one generation to the next (the end time and
// the writing process) with fixed values, so that a regenerated folder compares equal.
func normalizeManifest(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, results.ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m results.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	end := fixtureStart.Add(10 * time.Minute)
	m.End, m.Process = &end, results.Process{}
	out, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// generateFixture writes model m's folder to dst, replacing what is there.
func generateFixture(t testing.TB, m fixtureModel, dst string) {
	t.Helper()
	src := writeFixture(t, t.TempDir(), m)
	normalizeManifest(t, src)
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// readTree returns every file under dir by its slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFixtures checks that the committed folders are what the models generate, or with
// -update rewrites them.
func TestFixtures(t *testing.T) {
	for _, m := range fixtureModels {
		t.Run(m.dir, func(t *testing.T) {
			committed := filepath.Join("testdata", m.dir)
			if *update {
				generateFixture(t, m, committed)
				return
			}
			if runtime.GOARCH != "amd64" {
				// Other architectures may fuse multiply-adds and round a microsecond differently.
				t.Skip("the committed folders were generated on amd64")
			}
			fresh := filepath.Join(t.TempDir(), m.dir)
			generateFixture(t, m, fresh)
			want, got := readTree(t, committed), readTree(t, fresh)
			for name, b := range got {
				if !bytes.Equal(b, want[name]) {
					t.Errorf("%s/%s differs from what the model generates (run go test -update to regenerate)", committed, name)
				}
			}
			for name := range want {
				if _, ok := got[name]; !ok {
					t.Errorf("%s/%s is not generated by the model", committed, name)
				}
			}
		})
	}
}
