package results

import (
	"bytes"
	"testing"
)

// BenchmarkAppend measures recording one request of 32 streamed tokens (35 events) into a
// folder, the work done between two requests of a run.
func BenchmarkAppend(b *testing.B) {
	exp, configs := testExperiment()
	configs[0].Request.MaxTokens = 32
	f, err := Create(b.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(StatusInterrupted)
	r := fakeRequest(configs[0], 5)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Seq = i
		if err := f.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestScanner measures decoding requests.csv rows.
func BenchmarkRequestScanner(b *testing.B) {
	_, configs := testExperiment()
	var buf bytes.Buffer
	e := RequestsCSV.NewEncoder(&buf)
	for seq := 0; seq < 1000; seq++ {
		r := fakeRequest(configs[0], seq)
		e.Encode(&r)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := RequestsCSV.NewScanner(bytes.NewReader(data), RequestsFile)
		n := 0
		for s.Scan() {
			n++
		}
		if s.Err() != nil || n != 1000 {
			b.Fatalf("%d rows: %v", n, s.Err())
		}
	}
}
