package sim

import (
	"io"
	"net/http"
	"strings"
	"testing"
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
