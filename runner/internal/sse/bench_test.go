package sse

import (
	"io"
	"testing"
)

// loopReader repeats one stream forever, returning at most chunk bytes per Read, as a network
// connection hands over whatever has arrived.
type loopReader struct {
	src   []byte
	pos   int
	chunk int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && n < r.chunk {
		c := copy(p[n:min(len(p), r.chunk)], r.src[r.pos:])
		n += c
		r.pos = (r.pos + c) % len(r.src)
	}
	return n, nil
}

var _ io.Reader = (*loopReader)(nil)

// benchEvent is the size and shape of a vLLM chat chunk with continuous usage stats.
const benchEvent = `data: {"id":"chatcmpl-5b0c2e61a9d34f0c8e7f","object":"chat.completion.chunk","created":1731295402,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" river"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":46,"total_tokens":52,"completion_tokens":6}}` + "\n\n"

// BenchmarkScanner measures the cost of one event: reading, splitting lines, copying the data.
func BenchmarkScanner(b *testing.B) {
	for _, bc := range []struct {
		name  string
		chunk int
	}{
		{"event-per-read", len(benchEvent)},
		{"4KiB-reads", 4096},
		{"64B-reads", 64},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := &loopReader{src: []byte(benchEvent), chunk: bc.chunk}
			sc := NewScanner(r)
			b.SetBytes(int64(len(benchEvent)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !sc.Scan() {
					b.Fatal(sc.Err())
				}
			}
		})
	}
}
