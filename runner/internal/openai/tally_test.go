package openai

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Chunk builders for the table.
func role() Chunk             { return Chunk{HasChoices: true} }
func text(s string) Chunk     { return Chunk{HasChoices: true, Text: s} }
func fin(reason string) Chunk { return Chunk{HasChoices: true, FinishReason: reason} }
func usageOnly(p, c int) Chunk {
	return Chunk{Usage: &Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}}
}
func withIDs(c Chunk, n int) Chunk {
	c.TokenIDs = make([]int, n)
	return c
}
func withCum(c Chunk, p, n int) Chunk {
	c.Usage = &Usage{PromptTokens: p, CompletionTokens: n, TotalTokens: p + n}
	return c
}

func TestTally(t *testing.T) {
	tests := []struct {
		name     string
		chunks   []Chunk
		output   int
		source   record.TokenSource
		perEvent string // fmt of PerEvent
		span     int    // -1: nil
		usage    int    // -1: nil
		note     string
	}{
		{
			name:   "empty stream",
			source: record.SourceNone, perEvent: "[]", span: -1, usage: -1,
		},
		{
			name: "first event carries 3 token ids, EOS id after the last text",
			chunks: []Chunk{role(), withIDs(text("Hello there,"), 3), withIDs(text(" you"), 1),
				withIDs(text("!"), 1), withIDs(fin("stop"), 1), usageOnly(5, 6)},
			output: 6, source: record.SourceTokenIDs, perEvent: "[0 3 1 1 1 0]", span: 2, usage: 6,
		},
		{
			name:   "token id chunk without text between text chunks counts in the span",
			chunks: []Chunk{withIDs(text("a"), 1), withIDs(role(), 1), withIDs(text("b"), 1)},
			output: 3, source: record.SourceTokenIDs, perEvent: "[1 1 1]", span: 2, usage: -1,
		},
		{
			name: "cumulative usage, first event of 3 tokens, EOS on the finish chunk",
			chunks: []Chunk{withCum(role(), 7, 0), withCum(text("abc"), 7, 3), withCum(text("d"), 7, 4),
				withCum(text("e"), 7, 5), withCum(fin("stop"), 7, 6), usageOnly(7, 6)},
			output: 6, source: record.SourceUsageCont, perEvent: "[0 3 1 1 1 0]", span: 2, usage: 6,
		},
		{
			name: "cumulative usage, final usage chunk one higher than the finish chunk (SGLang)",
			chunks: []Chunk{withCum(role(), 0, 0), withCum(text("a"), 9, 1), withCum(text("b"), 9, 2),
				withCum(fin("stop"), 9, 3), usageOnly(9, 4)},
			output: 4, source: record.SourceUsageCont, perEvent: "[0 1 1 1 1]", span: 1, usage: 4,
			note: "finish chunk's usage says 3 completion tokens, the final usage chunk 4",
		},
		{
			name: "zeroed usage on every chunk (ollama), real usage at the end",
			chunks: []Chunk{withCum(text("a"), 0, 0), withCum(text("b"), 0, 0), withCum(fin("length"), 0, 0),
				usageOnly(4, 2)},
			output: 2, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 2,
			note: "all zeros",
		},
		{
			name:   "zeroed usage and no final chunk",
			chunks: []Chunk{withCum(text("a"), 0, 0), withCum(text("b"), 0, 0), withCum(fin("length"), 0, 0)},
			source: record.SourceNone, perEvent: "[]", span: -1, usage: -1, note: "all zeros",
		},
		{
			name:   "usage on the finish chunk only (SGLang without include_usage chunk)",
			chunks: []Chunk{role(), text("a"), text("b"), withCum(fin("length"), 3, 2)},
			output: 2, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 2,
		},
		{
			name: "cumulative usage that falls is not per-event",
			chunks: []Chunk{withCum(text("a"), 1, 1), withCum(text("b"), 1, 3), withCum(text("c"), 1, 2),
				usageOnly(1, 3)},
			output: 3, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 3, note: "falls from 3 to 2",
		},
		{
			name:   "text chunk that does not raise cumulative usage",
			chunks: []Chunk{withCum(text("a"), 1, 1), withCum(text("b"), 1, 1), usageOnly(1, 1)},
			output: 1, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 1, note: "do not raise",
		},
		{
			// The rest of a token's text in its own event: text, no new token.
			name: "a word split over two events, cumulative usage",
			chunks: []Chunk{withCum(text("a"), 1, 1), withCum(text("bc"), 1, 2), withCum(text("d"), 1, 2),
				withCum(text("e"), 1, 3), usageOnly(1, 3)},
			output: 3, source: record.SourceUsageCont, perEvent: "[1 1 0 1 0]", span: 2, usage: 3,
		},
		{
			name: "a word split over two events, token ids",
			chunks: []Chunk{withIDs(text("a"), 1), withIDs(text("bc"), 1), withIDs(text("d"), 0),
				withIDs(text("e"), 1), usageOnly(1, 3)},
			output: 3, source: record.SourceTokenIDs, perEvent: "[1 1 0 1 0]", span: 2, usage: 3,
		},
		{
			name:   "token ids missing on a text chunk are not per-event",
			chunks: []Chunk{withIDs(text("a"), 1), text("b"), withIDs(text("c"), 1), usageOnly(1, 3)},
			output: 3, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 3, note: "no token ids",
		},
		{
			name:   "usage on some chunks with choices only",
			chunks: []Chunk{withCum(text("a"), 1, 1), text("b"), withCum(text("c"), 1, 3), usageOnly(1, 3)},
			output: 3, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 3,
		},
		{
			name:   "a text chunk without token ids falls back",
			chunks: []Chunk{withIDs(text("a"), 1), text("b"), usageOnly(2, 2)},
			output: 2, source: record.SourceUsage, perEvent: "[]", span: -1, usage: 2, note: "carry no token ids",
		},
		{
			name:   "token ids and usage disagree",
			chunks: []Chunk{withIDs(text("a"), 1), withIDs(text("b"), 1), usageOnly(2, 3)},
			output: 2, source: record.SourceTokenIDs, perEvent: "[1 1 0]", span: 1, usage: 3,
			note: "token ids count 2 output tokens, usage 3",
		},
		{
			name:   "one text event has no span",
			chunks: []Chunk{withIDs(text("a"), 2), withIDs(fin("stop"), 1)},
			output: 3, source: record.SourceTokenIDs, perEvent: "[2 1]", span: -1, usage: -1,
		},
		{
			name: "undecodable and error chunks keep their slots",
			chunks: []Chunk{withCum(role(), 2, 0), withCum(text("a"), 2, 1), {}, withCum(text("b"), 2, 2),
				{Err: &StreamError{Message: "x"}}, usageOnly(2, 2)},
			output: 2, source: record.SourceUsageCont, perEvent: "[0 1 0 1 0 0]", span: 1, usage: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ta Tally
			for _, c := range tt.chunks {
				ta.Add(c)
			}
			if ta.Len() != len(tt.chunks) {
				t.Errorf("Len() = %d, want %d", ta.Len(), len(tt.chunks))
			}
			c := ta.Counts()
			if c.Output != tt.output || c.Source != tt.source {
				t.Errorf("output %d from %q, want %d from %q", c.Output, c.Source, tt.output, tt.source)
			}
			if got := fmt.Sprint(c.PerEvent); got != tt.perEvent {
				t.Errorf("PerEvent = %s, want %s", got, tt.perEvent)
			}
			if (c.PerEvent != nil) != c.Source.Exact() {
				t.Errorf("PerEvent set = %v but source %q", c.PerEvent != nil, c.Source)
			}
			if orMinus(c.Span) != tt.span {
				t.Errorf("Span = %d, want %d", orMinus(c.Span), tt.span)
			}
			if orMinus(c.FromUsage) != tt.usage {
				t.Errorf("FromUsage = %d, want %d", orMinus(c.FromUsage), tt.usage)
			}
			notes := strings.Join(c.Notes, "\n")
			if tt.note == "" && notes != "" {
				t.Errorf("unexpected notes: %s", notes)
			}
			if tt.note != "" && !strings.Contains(notes, tt.note) {
				t.Errorf("notes %q lack %q", notes, tt.note)
			}
		})
	}
}

// TestTallyStreamed checks what a Tally says the stream delivered of the per-event options,
// whatever was asked for and whether or not the counts were trusted.
func TestTallyStreamed(t *testing.T) {
	tests := []struct {
		name          string
		chunks        []Chunk
		ids, perEvent bool
	}{
		{"nothing", []Chunk{role(), text("a"), text("b"), fin("stop"), usageOnly(3, 2)}, false, false},
		{"token ids", []Chunk{withIDs(text("a"), 1), withIDs(text("b"), 1), withIDs(fin("stop"), 1)}, true, false},
		{"token ids on some text chunks", []Chunk{withIDs(text("a"), 1), text("b"), text("c")}, true, false},
		{"cumulative usage", []Chunk{withCum(role(), 7, 0), withCum(text("a"), 7, 1), withCum(text("b"), 7, 2), usageOnly(7, 2)}, false, true},
		{"cumulative usage left flat (not trusted, but delivered)", []Chunk{withCum(text("a"), 7, 1), withCum(text("b"), 7, 1), withCum(text("c"), 7, 1)}, false, true},
		{"usage on some chunks only", []Chunk{withCum(text("a"), 7, 1), text("b"), withCum(fin("stop"), 7, 2)}, false, false},
		{"zeroed usage on every chunk (ollama)", []Chunk{withCum(text("a"), 0, 0), withCum(text("b"), 0, 0), usageOnly(4, 2)}, false, false},
		{"both", []Chunk{withIDs(withCum(text("a"), 7, 1), 1), withIDs(withCum(text("b"), 7, 2), 1)}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ta Tally
			for _, c := range tt.chunks {
				ta.Add(c)
			}
			c := ta.Counts()
			if c.StreamedIDs != tt.ids || c.StreamedCumulative != tt.perEvent {
				t.Errorf("StreamedIDs %v, StreamedCumulative %v; want %v, %v", c.StreamedIDs, c.StreamedCumulative, tt.ids, tt.perEvent)
			}
		})
	}
}

func TestTallyPromptTokens(t *testing.T) {
	var ta Tally
	ta.Add(withCum(text("a"), 0, 0))
	ta.Add(withCum(text("b"), 12, 0))
	if c := ta.Counts(); orMinus(c.PromptTokens) != 12 || c.Usage != nil {
		t.Errorf("prompt %d, usage %+v; want 12 and no trusted usage", orMinus(c.PromptTokens), c.Usage)
	}
	ta.Add(usageOnly(13, 2))
	if c := ta.Counts(); orMinus(c.PromptTokens) != 13 || c.Usage == nil || c.Usage.TotalTokens != 15 {
		t.Errorf("prompt %d, usage %+v; want the final usage chunk's 13", orMinus(c.PromptTokens), c.Usage)
	}
}

// TestDecodeEmptyTokenIDs checks that an empty token_ids list (an event with text and no new
// token) stays apart from an absent or null one, which the Tally relies on.
func TestDecodeEmptyTokenIDs(t *testing.T) {
	c, err := DecodeChunk([]byte(`{"choices":[{"index":0,"text":"x","token_ids":[]}]}`))
	if err != nil || c.TokenIDs == nil || len(c.TokenIDs) != 0 {
		t.Fatalf("[]: %v %#v", err, c.TokenIDs)
	}
	for _, data := range []string{`{"choices":[{"index":0,"text":"x","token_ids":null}]}`, `{"choices":[{"index":0,"text":"x"}]}`} {
		c, err := DecodeChunk([]byte(data))
		if err != nil || c.TokenIDs != nil {
			t.Fatalf("%s: %v %#v", data, err, c.TokenIDs)
		}
	}
}
