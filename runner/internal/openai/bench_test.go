package openai

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecodeChunk measures decoding one vLLM chat chunk with continuous usage stats.
func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-5b0c2e61a9d34f0c8e7f","object":"chat.completion.chunk","created":1731295402,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" river"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":46,"total_tokens":52,"completion_tokens":6}}`)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c, err := DecodeChunk(data)
		if err != nil || c.Text != " river" {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkParseMetrics measures parsing a vLLM /metrics page with two engines.
func BenchmarkParseMetrics(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "metrics", "vllm_v1_two_engines.prom"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMetrics(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
