package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkStream measures the simulator's own overhead: one zero-latency streamed request of
// 256 tokens through a real HTTP connection, with continuous usage and token ids.
func BenchmarkStream(b *testing.B) {
	_, ts := startServer(b, func(c *Config) { c.Now = nil })
	body := `{"prompt":"the sun","max_tokens":256,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/token")
}

// BenchmarkTokenize measures the toy tokenizer on 4 KiB of mixed words and characters.
func BenchmarkTokenize(b *testing.B) {
	tok := newTokenizer()
	text := strings.Repeat("the quick brown fox, hello world. ", 4096/34)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.encode(text, true)
	}
}

// BenchmarkBatchStreams serves concurrent streams through the batching engine over real HTTP
// connections. With a 10 ms decode step it reports how late the simulator sends events against
// its own plan (lag-p50-ms, lag-p99-ms: the stamp minus the planned time), which is the
// simulator's share of any client's measured delay; with zero latency it reports the cost of an
// event (ns/event) and allocations per event.
func BenchmarkBatchStreams(b *testing.B) {
	for _, bc := range []struct {
		name    string
		streams int
		decode  time.Duration
	}{
		{"256x10ms", 256, 10 * time.Millisecond},
		{"256x0", 256, 0},
		{"1024x20ms", 1024, 20 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const tokens = 32
			s, ts := startServer(b, func(c *Config) {
				c.Now = nil
				c.MaxNumSeqs = bc.streams
				c.DecodePerToken = bc.decode
				c.Stamp = true
			})
			var mu sync.Mutex
			due := map[string]planned{}
			s.traceSeq = func(q *seq) {
				mu.Lock()
				due[q.id] = planned{start: q.start, p: q.p}
				mu.Unlock()
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: bc.streams, MaxConnsPerHost: bc.streams}}
			body := fmt.Sprintf(`{"prompt":"the sun","max_tokens":%d,"stream":true}`, tokens)
			var lags []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				bodies := make([][]byte, bc.streams)
				for i := range bc.streams {
					wg.Go(func() {
						resp, err := client.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						defer resp.Body.Close()
						bodies[i], _ = io.ReadAll(resp.Body)
					})
				}
				wg.Wait()
				b.StopTimer()
				for _, raw := range bodies {
					evs := bytes.Split(bytes.TrimSpace(raw), []byte("\n\n"))
					if len(evs) != tokens+1 {
						b.Fatalf("%d events, want %d", len(evs), tokens+1)
					}
					var pl planned
					for j, ev := range evs[:tokens] {
						var c struct {
							ID  string `json:"id"`
							Sim stamp  `json:"sim"`
						}
						if err := json.Unmarshal(bytes.TrimPrefix(ev, []byte("data: ")), &c); err != nil {
							b.Fatal(err)
						}
						if j == 0 {
							pl = due[c.ID]
						}
						lags = append(lags, time.Duration(c.Sim.SentNS-pl.start.Add(pl.p.eventAt(&pl.p.events[j])).UnixNano()))
					}
				}
				b.StartTimer()
			}
			events := float64(b.N * bc.streams * tokens)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)/2])/1e6, "lag-p50-ms")
			b.ReportMetric(float64(lags[len(lags)*99/100])/1e6, "lag-p99-ms")
		})
	}
}
