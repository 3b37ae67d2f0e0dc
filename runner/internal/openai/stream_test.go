package openai

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// streamResult is what reading one stream end to end gives.
type streamResult struct {
	events        []sse.Event
	chunks        []Chunk
	decodeErrs    []error
	counts        Counts
	done, errSeen bool
}

// readStream runs a stream through the three pieces as a measurement would: sse.Scanner,
// DecodeChunk for each event, and a Tally fed every event but [DONE].
func readStream(t *testing.T, r io.Reader, opts ...sse.Option) streamResult {
	t.Helper()
	var res streamResult
	var tally Tally
	sc := sse.NewScanner(r, opts...)
	for sc.Scan() {
		ev := sc.Event()
		ev.Data = bytes.Clone(ev.Data)
		c, err := DecodeChunk(ev.Data)
		res.decodeErrs = append(res.decodeErrs, err)
		res.events = append(res.events, ev)
		res.chunks = append(res.chunks, c)
		if c.Done {
			res.done = true
		}
		if c.Err != nil {
			res.errSeen = true
		}
		if c.Done && c.Err == nil {
			continue // [DONE] is not an event of the record
		}
		tally.Add(c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scanner: %v", err)
	}
	res.counts = tally.Counts()
	return res
}

// render writes the golden form of a stream's result.
func (res streamResult) render() string {
	var b strings.Builder
	slot := 0
	for i, c := range res.chunks {
		ev := res.events[i]
		fmt.Fprintf(&b, "#%d bytes=%d", i, ev.Bytes)
		if err := res.decodeErrs[i]; err != nil {
			fmt.Fprintf(&b, " DECODE-ERROR %v", err)
		} else {
			if c.Done {
				b.WriteString(" done")
			}
			if c.IsText() {
				fmt.Fprintf(&b, " TEXT %q", c.Text)
			}
			if c.Reasoning != "" {
				fmt.Fprintf(&b, " reasoning=%q", c.Reasoning)
			}
			if c.ToolCalls {
				b.WriteString(" tool_calls")
			}
			if c.HasChoices {
				b.WriteString(" choices")
			}
			if c.FinishReason != "" {
				fmt.Fprintf(&b, " finish=%s", c.FinishReason)
			}
			if c.TokenIDs != nil {
				fmt.Fprintf(&b, " ids=%v", c.TokenIDs)
			}
			if u := c.Usage; u != nil {
				fmt.Fprintf(&b, " usage=%d/%d/%d", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
				if u.ReasoningTokens > 0 {
					fmt.Fprintf(&b, "(reasoning %d)", u.ReasoningTokens)
				}
			}
			if c.Err != nil {
				fmt.Fprintf(&b, " error=%q", c.Err.Error())
			}
		}
		if !(c.Done && c.Err == nil && res.decodeErrs[i] == nil) {
			if res.counts.PerEvent != nil {
				fmt.Fprintf(&b, " tokens=%d", res.counts.PerEvent[slot])
			}
			slot++
		}
		b.WriteByte('\n')
	}
	c := res.counts
	fmt.Fprintf(&b, "text_events=%d output=%d source=%q span=%s ids=%s cumulative=%s usage=%s prompt=%s done=%v error=%v\n",
		c.TextEvents, c.Output, c.Source, ptr(c.Span), ptr(c.FromIDs), ptr(c.FromCumulative), ptr(c.FromUsage), ptr(c.PromptTokens), res.done, res.errSeen)
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func ptr(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// TestStreamsGolden reads every stream in testdata/streams with sse.Scanner, DecodeChunk and a
// Tally, whole and one byte at a time, and compares the outcome with testdata/golden.
func TestStreamsGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no streams in testdata/streams")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".sse")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := readStream(t, bytes.NewReader(in))
			got := res.render()
			slow := readStream(t, iotest.OneByteReader(bytes.NewReader(in)))
			if stripBytes(slow.render()) != stripBytes(got) {
				t.Errorf("one byte at a time differs:\n%s\nwhole:\n%s", slow.render(), got)
			}
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("differs from %s\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// stripBytes drops the bytes= fields, which can shift by a CRLF's LF with read boundaries.
func stripBytes(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, " bytes="); i >= 0 {
			j := strings.IndexByte(line[i+1:], ' ')
			if j < 0 {
				line = line[:i]
			} else {
				line = line[:i] + line[i+1+j:]
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestStreamsTable states by hand what each stream must give, independently of the golden
// files: text events, output tokens and their source, tpot_token's span, the final usage, and
// how the stream ended.
func TestStreamsTable(t *testing.T) {
	type want struct {
		text       int
		output     int
		source     record.TokenSource
		span       int // -1: none
		usage      int // -1: none
		prompt     int // -1: none
		done       bool
		streamErr  bool
		decodeErrs int
		note       string // a substring of one note, "" for no notes
	}
	tests := map[string]want{
		"vllm_chat_continuous_usage":            {7, 8, record.SourceUsageCont, 6, 8, 21, true, false, 0, ""},
		"vllm_chat_continuous_usage_multitoken": {3, 7, record.SourceUsageCont, 3, 7, 11, true, false, 0, ""},
		"vllm_chat_token_ids":                   {3, 7, record.SourceTokenIDs, 3, 7, 9, true, false, 0, ""},
		"vllm_chat_include_usage":               {5, 5, record.SourceUsage, -1, 5, 12, true, false, 0, ""},
		"vllm_chat_role_no_content_truncated":   {5, 0, record.SourceNone, -1, -1, -1, false, false, 0, ""},
		"vllm_completions_empty_text":           {3, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
		"vllm_completions_include_usage":        {3, 3, record.SourceUsage, -1, 3, 4, true, false, 0, ""},
		"vllm_omni_chat_continuous_usage":       {5, 6, record.SourceUsageCont, 4, 6, 15, true, false, 0, ""},
		"vllm_chat_error_object":                {1, 0, record.SourceNone, -1, -1, -1, true, true, 0, ""},
		"sglang_chat_continuous_usage":          {5, 7, record.SourceUsageCont, 4, 7, 27, true, false, 0, "finish chunk's usage says 6"},
		"sglang_chat_usage_on_finish":           {4, 4, record.SourceUsage, -1, 4, 6, true, false, 0, ""},
		"sglang_grpc_router_chat":               {5, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
		"sglang_error_then_done":                {0, 0, record.SourceNone, -1, -1, -1, true, true, 0, ""},
		"tgi_chat_include_usage":                {5, 5, record.SourceUsage, -1, 5, 30, true, false, 0, ""},
		"tgi_chat_text_completion_object":       {2, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
		"tgi_generate_stream":                   {3, 4, record.SourceTokenIDs, 2, -1, -1, false, false, 0, ""},
		"llamacpp_chat_usage_timings":           {2, 3, record.SourceUsage, -1, 3, 18, true, false, 0, ""},
		"llamacpp_chat_reasoning_timings":       {2, 5, record.SourceUsage, -1, 5, 9, true, false, 0, ""},
		"llamacpp_completions":                  {4, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
		"ollama_chat_reasoning_usage":           {2, 9, record.SourceUsage, -1, 9, 70, true, false, 0, ""},
		"ollama_chat_zeroed_usage":              {4, 4, record.SourceUsage, -1, 4, 16, true, false, 0, "all zeros"},
		"ollama_chat_literal_escape_artifact":   {0, 0, record.SourceNone, -1, -1, -1, true, false, 1, ""},
		"openai_chat_include_usage":             {2, 2, record.SourceUsage, -1, 2, 14, true, false, 0, ""},
		"openai_chat_toolcall":                  {0, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
		"openai_chat_reasoning_tokens":          {1, 131, record.SourceUsage, -1, 131, 20, true, false, 0, ""},
		"crlf_keepalive_comments":               {2, 0, record.SourceNone, -1, -1, -1, true, false, 0, ""},
	}
	paths, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(tests) {
		t.Errorf("%d streams in testdata/streams, %d in the table", len(paths), len(tests))
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".sse")
		t.Run(name, func(t *testing.T) {
			w, ok := tests[name]
			if !ok {
				t.Fatalf("no table entry for %s", name)
			}
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := readStream(t, bytes.NewReader(in))
			c := res.counts
			nDecode := 0
			for _, err := range res.decodeErrs {
				if err != nil {
					nDecode++
					if !errors.Is(err, ErrDecode) {
						t.Errorf("decode error %v does not wrap ErrDecode", err)
					}
				}
			}
			check := func(what string, got, want any) {
				t.Helper()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("text events", c.TextEvents, w.text)
			check("output", c.Output, w.output)
			check("source", c.Source, w.source)
			check("span", orMinus(c.Span), w.span)
			check("final usage", orMinus(c.FromUsage), w.usage)
			check("prompt tokens", orMinus(c.PromptTokens), w.prompt)
			check("done", res.done, w.done)
			check("stream error", res.errSeen, w.streamErr)
			check("decode errors", nDecode, w.decodeErrs)
			if c.Source.Exact() != (c.PerEvent != nil) {
				t.Errorf("source %q but PerEvent %v", c.Source, c.PerEvent)
			}
			if c.PerEvent != nil {
				sum := 0
				for _, n := range c.PerEvent {
					sum += n
				}
				check("sum of per-event tokens", sum, c.Output)
			}
			joined := strings.Join(c.Notes, "\n")
			if w.note == "" && joined != "" {
				t.Errorf("unexpected notes: %s", joined)
			}
			if w.note != "" && !strings.Contains(joined, w.note) {
				t.Errorf("notes %q lack %q", joined, w.note)
			}
		})
	}
}

func orMinus(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// TestStreamArrivalTimes shows the pieces together keep each event's arrival time: a stream
// delivered in three reads stamps each chunk with the read that completed it.
func TestStreamArrivalTimes(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "streams", "vllm_chat_include_usage.sse"))
	if err != nil {
		t.Fatal(err)
	}
	// Split after the second and the fifth event.
	parts := bytes.SplitAfter(in, []byte("\n\n"))
	reads := [][]byte{bytes.Join(parts[:2], nil), bytes.Join(parts[2:5], nil), bytes.Join(parts[5:], nil)}
	calls := 0
	clock := func() time.Time { calls++; return time.Unix(int64(calls), 0) }
	res := readStream(t, &chunks{parts: reads}, sse.WithClock(clock))
	var stamps []int64
	for _, ev := range res.events {
		stamps = append(stamps, ev.At.Unix())
	}
	want := []int64{1, 1, 2, 2, 2, 3, 3, 3}
	if fmt.Sprint(stamps) != fmt.Sprint(want) {
		t.Errorf("arrival reads %v, want %v", stamps, want)
	}
}

// chunks returns one part per Read.
type chunks struct{ parts [][]byte }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if len(c.parts[0]) == 0 {
		c.parts = c.parts[1:]
	}
	return n, nil
}
