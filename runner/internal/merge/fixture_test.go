package merge

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// The fixtures of the shard folders that the tests merge: the same machine, time and requests
// as the results package's own tests use, so that the folders read alike.

// t0 is a fixed wall-clock time for deterministic folders.
var t0 = time.Date(2026, 11, 29, 8, 12, 0, 123456789, time.UTC)

// testMachine is a fixed machine description.
var testMachine = results.Machine{Hostname: "bench-1", OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.1.0-18-amd64",
	Arch: "linux/amd64", CPU: "AMD EPYC 7B13", CPUs: 2, MemoryBytes: 24 << 30,
	GPUs: []results.GPU{{Index: 0, Name: "Tesla T4", Driver: "535.104.05", MemoryMiB: 15360, UUID: "GPU-5b8e2f4c-0000-0000-0000-000000000000"}}}

// fakeRequest returns a deterministic request shaped like a chat stream from a vLLM server
// with continuous usage stats: the first text event carries one token, later ones one each,
// and a final usage-only chunk. Its numbers depend only on its arguments.
func fakeRequest(c experiment.Config, seq int) record.Request {
	phase, rep := record.PhaseMeasure, seq-1-c.Warmup
	switch {
	case seq == 0:
		phase, rep = record.PhaseFirst, 0
	case seq <= c.Warmup:
		phase, rep = record.PhaseWarmup, seq-1
	}
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(math.Round(x * 1e6))) }
	n := c.Request.MaxTokens
	ttft := 20 + float64((seq*37)%11) + float64(c.Index)*5 + 0.123456
	gap := 2.5 + float64((seq*13)%7)/10
	r := record.Request{
		ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Rep: rep,
		Start:  t0.Add(time.Duration(seq)*time.Second + time.Duration(c.Index)*time.Minute),
		Status: record.StatusOK, HTTPStatus: 200, ConnReused: seq > 0,
		WroteRequest: ms(0.210), FirstByte: ms(ttft - 1.5), TTFT: ms(ttft),
		LastText: ms(ttft + gap*float64(n-1)), E2E: ms(ttft + gap*float64(n-1) + 0.4),
		TPOTEvent: ms(gap), TPOTToken: ms(gap), TPOTTokenExact: true, ITLMedian: ms(gap), ITLMax: ms(gap + 1),
		Events: n + 2, TextEvents: n, OutputTokens: record.Int(n), TokenSource: record.SourceUsageCont,
		TokensFromUsage: record.Int(n), TokensFromTiktoken: record.Int(n - 1), TiktokenEncoding: "cl100k_base",
		PromptTokensRequested: record.Int(c.Request.PromptTokens), PromptTokensReported: record.Int(c.Request.PromptTokens),
		MaxTokens: n, FinishReason: "length", ContinuousUsage: true, Cache: c.Cache, CacheReset: true,
		OutputText: "The quick brown fox\n\"jumps\", over",
	}
	// A role-only chunk, the text events, a finish chunk and a usage-only chunk.
	r.EventList = append(r.EventList, record.Event{Seq: 0, SinceT0: time.Duration(math.Round((ttft - 0.3) * 1e6)), Bytes: 120})
	for i := 0; i < n; i++ {
		r.EventList = append(r.EventList, record.Event{Seq: i + 1, SinceT0: time.Duration(math.Round((ttft + gap*float64(i)) * 1e6)),
			Bytes: 180 + i%3, TextLen: 3 + i%4, Tokens: record.Int(1), Text: true})
	}
	r.EventList = append(r.EventList, record.Event{Seq: n + 1, SinceT0: time.Duration(math.Round((ttft + gap*float64(n-1) + 0.3) * 1e6)), Bytes: 150, Tokens: record.Int(0)})
	return r
}

// failedRequest returns a request that timed out.
func failedRequest(c experiment.Config, seq int) record.Request {
	r := fakeRequest(c, seq)
	r.Status, r.ErrorClass, r.Error = record.StatusFailed, record.ErrTimeout, "request deadline 30s exceeded\nafter 3 events"
	r.TTFT, r.LastText, r.E2E, r.TPOTEvent, r.TPOTToken, r.ITLMedian, r.ITLMax = nil, nil, nil, nil, nil, nil, nil
	r.TPOTTokenExact = false
	r.OutputTokens, r.TokensFromUsage, r.TokensFromTiktoken, r.TokenSource = nil, nil, nil, record.SourceNone
	r.FinishReason, r.OutputText = "", ""
	r.EventList = r.EventList[:3]
	r.Events, r.TextEvents = 3, 2
	return r
}

// writeManifest replaces the manifest of the folder dir with m, as the results package writes
// one, for tests of a shard folder whose manifest a run would not write.
func writeManifest(dir string, m *results.Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, results.ManifestFile), append(b, '\n'), 0o644)
}

// readerSchema returns the files and columns that a reader of the folder dir derives from its
// manifest and files.
func readerSchema(t *testing.T, dir string) []results.FileSchema {
	t.Helper()
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r.Schema()
}
