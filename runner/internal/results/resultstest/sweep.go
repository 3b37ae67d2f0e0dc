package resultstest

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// Sweep is a latency model of a vLLM server over prompt × output lengths, for folders that
// charts and prefill/decode fits can be drawn from. The streams have the shape of vLLM's
// completions stream with continuous usage stats: every text event says how many tokens it
// carried, the first carries one, and a usage-only chunk without text ends the stream. With
// multi-step scheduling (vLLM's --num-scheduler-steps) one event may carry several tokens,
// which is what Chunk describes. Each config has a first request, one warm-up and six measured
// requests, two seconds apart.
type Sweep struct {
	Name          string // the experiment's name; "report-fixture" when empty
	EngineVersion string
	Args          []string  // extra server arguments, which also change the config ids
	Prompts       []int     // request.prompt_tokens axis
	Outputs       []int     // request.max_tokens axis
	A, B          float64   // TTFT = A + B·prompt tokens (ms)
	C0, CP        float64   // time per output token = C0 + CP·prompt tokens (ms)
	Chunk         []float64 // probability that an event after the first carries 1, 2, 3, ... tokens
	Fail          [2]int    // a failed measured request: config index and seq (seq 0 for none)
	NoEventTokens bool      // the server says only the total (final usage), not what each event carried
	Seed          uint64
}

// SweepStart is the start time of every Sweep's run.
var SweepStart = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// sweepModel is the model name a Sweep's server serves.
const sweepModel = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"

// WantC is the decode coefficient a fit should find: the line through the origin over a
// balanced design weighs every prompt length alike, so c is the per-token time at the mean
// prompt length.
func (m Sweep) WantC() float64 {
	var s float64
	for _, p := range m.Prompts {
		s += float64(p)
	}
	return m.C0 + m.CP*s/float64(len(m.Prompts))
}

func (m Sweep) name() string {
	if m.Name == "" {
		return "report-fixture"
	}
	return m.Name
}

// Source returns the experiment file the sweep's folder records.
func (m Sweep) Source() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# yaml-language-server: $schema=../schema/experiment.schema.json\nversion: 1\nname: %s\n", m.name())
	b.WriteString("description: TTFT against prompt length and TPOT against output length (a synthetic folder for report tests)\n")
	b.WriteString("server:\n  engine: vllm\n  model: " + sweepModel + "\n  dtype: half\n  max_model_len: 1024\n")
	if len(m.Args) > 0 {
		quoted := make([]string, len(m.Args))
		for i, s := range m.Args {
			quoted[i] = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&b, "  args: [%s]\n", strings.Join(quoted, ", "))
	}
	b.WriteString("request:\n  api: completions\n  ignore_eos: true\n")
	fmt.Fprintf(&b, "matrix:\n  request.prompt_tokens: [%s]\n  request.max_tokens: [%s]\n", joinInts(m.Prompts), joinInts(m.Outputs))
	b.WriteString("warmup: 1\nrepetitions: 6\ncache: reset\n")
	return []byte(b.String())
}

func joinInts(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

// Builder returns the Builder of the sweep's folder: the experiment parsed from Source and
// expanded, one vLLM server with its log, and requests drawn from the model. A source that
// does not parse fails t.
func (m Sweep) Builder(t testing.TB) *Builder {
	t.Helper()
	path := "experiments/" + m.name() + ".yaml"
	exp, err := experiment.Parse(path, m.Source())
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	machine := results.Machine{Hostname: "bench-1", OS: "Debian GNU/Linux 12 (bookworm)", Arch: "linux/amd64", CPU: "Intel Xeon",
		CPUs: 8, MemoryBytes: 32 << 30, GPUs: []results.GPU{{Index: 0, Name: "Tesla T4", Driver: "550.54.15", MemoryMiB: 15360}}}
	serverID := configs[0].ServerID
	boot, exit := 41.5, 0
	argv := append([]string{"vllm", "serve", sweepModel, "--dtype", "half", "--max-model-len", "1024",
		"--host", "127.0.0.1", "--port", "8000"}, m.Args...)
	return &Builder{
		Experiment: exp,
		Configs:    configs,
		Run: results.RunInfo{RunnerVersion: "0.1.0", RunnerCommit: "fixture", Command: []string{"runner", path},
			Start: SweepStart, Machine: &machine},
		Logs: map[string]string{serverID: fmt.Sprintf("INFO: vLLM API server version %s\nINFO: Started server process\n"+
			"INFO: Application startup complete.\n", m.EngineVersion)},
		Servers: []results.ServerInfo{{ServerID: serverID, Engine: "vllm", EngineVersion: m.EngineVersion, Model: sweepModel,
			Argv: argv, BootStart: SweepStart, BootSeconds: &boot, ExitCode: &exit}},
		Seed:    [2]uint64{m.Seed, 7},
		Request: m.request,
	}
}

// Write writes the sweep's folder under root and returns its path.
func (m Sweep) Write(t testing.TB, root string) string {
	t.Helper()
	return m.Builder(t).Write(t, root)
}

var sweepWords = strings.Fields("the cache keeps keys and values of every token so that the next step reads them instead of computing them again")

// usec rounds milliseconds to whole microseconds.
func usec(x float64) time.Duration { return time.Duration(math.Round(x*1000)) * time.Microsecond }

// request draws one request from the model.
func (m Sweep) request(d Draw) record.Request {
	rng, c, seq := d.Rand, d.Config, d.Seq
	start := SweepStart.Add(45*time.Second + time.Duration(d.N)*2*time.Second)
	phase, rep := d.Phase()
	p, o := c.Request.PromptTokens, c.Request.MaxTokens
	r := record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: rep, Start: start,
		HTTPStatus: 200, ConnReused: seq > 0, WroteRequest: record.Dur(usec(0.15)), FirstByte: record.Dur(usec(1.2 + 0.2*rng.Float64())),
		PromptTokensRequested: record.Int(p), MaxTokens: o, ContinuousUsage: true, Cache: "reset", CacheReset: true}
	if c.Index == m.Fail[0] && seq == m.Fail[1] && seq > 0 {
		r.Status, r.ErrorClass, r.Error = record.StatusFailed, record.ErrTruncated, "the stream ended without [DONE] after 12 events"
		return r
	}
	r.Status = record.StatusOK

	ttft := m.A + m.B*float64(p) + rng.NormFloat64()
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
	per := m.C0 + m.CP*float64(p)
	times := []float64{ttft}
	for k := 2; k <= o; k++ {
		times = append(times, times[k-2]+per*math.Max(0.3, 1+0.07*rng.NormFloat64()))
	}
	var text strings.Builder
	addEvent := func(tokens int, at float64) {
		n := 0
		for range tokens {
			w := sweepWords[rng.IntN(len(sweepWords))]
			text.WriteString(" " + w)
			n += len(w) + 1
		}
		e := record.Event{Seq: len(r.EventList), SinceT0: usec(at), Bytes: 210 + n, TextLen: n, Text: true}
		if !m.NoEventTokens {
			e.Tokens = record.Int(tokens)
		}
		r.EventList = append(r.EventList, e)
	}
	addEvent(1, times[0])
	for k := 1; k < o; {
		size := 1
		for u, acc := rng.Float64(), 0.0; size <= len(m.Chunk); size++ {
			acc += m.Chunk[size-1]
			if u < acc {
				break
			}
		}
		size = min(size, len(m.Chunk), o-k)
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
	if m.NoEventTokens {
		r.TokenSource, r.TPOTTokenExact, r.ContinuousUsage = record.SourceUsage, false, false
	}
	r.PromptTokensReported = record.Int(p)
	r.FinishReason = "length"
	r.OutputText = strings.TrimPrefix(text.String(), " ")
	return r
}
