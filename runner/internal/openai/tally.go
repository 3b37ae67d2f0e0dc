package openai

import (
	"fmt"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Tally counts output tokens from a stream's decoded chunks, fed in stream order with Add.
// The zero value is ready to use.
//
// Servers disagree on where usage appears, so the Tally decides at the end which numbers to
// trust:
//
//   - Per-event counts from token ids (vLLM's return_token_ids): used when every text chunk
//     carries a non-empty choices[0].token_ids. Each chunk then carries len(token_ids).
//   - Per-event counts from cumulative usage (vLLM's and SGLang's continuous_usage_stats): used
//     when every chunk with choices carries usage, the cumulative completion_tokens never
//     decrease, at least one is non-zero, and every text chunk raises them. Each chunk then
//     carries the rise since the previous chunk with usage; the final usage chunk takes part
//     in the series, so a last token counted only there (SGLang counts 15 on its finish chunk
//     and 16 on the usage chunk after it) is a token carried by that chunk.
//   - The final total: usage from the chunk whose choices are empty (the include_usage chunk);
//     failing that, usage on the chunk that carries finish_reason (SGLang). A usage of all
//     zeros is never trusted: ollama puts one on every chunk when include_usage is on.
//   - A usage with a negative count is never used at all, on any chunk: no generation has a
//     negative number of tokens, so none of its numbers is a count. Its prompt and completion
//     tokens stay unknown (an empty cell, not a measurement of -3) and the output count falls
//     to the next source; Counts.Notes says so.
//
// A chunk's tokens count toward Span when the chunk comes after the first text event, up to
// and including the last one: tokens that arrive with the first text event, and tokens after
// the last (an end-of-sequence token on a finish chunk without text), are left out, as
// tpot_token's definition asks.
type Tally struct {
	slots []slot
	// negative is how many chunks carried a usage with a negative count, which was dropped.
	negative int
}

// slot is what the Tally keeps of one chunk.
type slot struct {
	text, choices, done bool
	finish              bool
	ids                 int
	hasIDs              bool
	usage               *Usage
}

// Add records the next chunk of the stream. Call it once per event in the order they arrived,
// for every event whose Tokens you want from Counts.PerEvent (a [DONE] or an event that did
// not decode may be added as Chunk{} or its decoded form; it carries no tokens).
func (t *Tally) Add(c Chunk) {
	s := slot{
		text:    c.IsText(),
		choices: c.HasChoices,
		done:    c.Done,
		finish:  c.FinishReason != "",
		usage:   c.Usage,
	}
	if c.Usage != nil && c.Usage.negative() {
		s.usage = nil
		t.negative++
	}
	if c.TokenIDs != nil {
		s.ids, s.hasIDs = len(c.TokenIDs), true
	}
	t.slots = append(t.slots, s)
}

// Len returns the number of chunks added.
func (t *Tally) Len() int { return len(t.slots) }

// Counts is what a Tally concluded about a stream's output tokens.
type Counts struct {
	// Output is the best count of output tokens, and Source where it came from:
	// record.SourceTokenIDs (the sum of per-event token ids), record.SourceUsageCont (the last
	// reading of the cumulative usage, normally the final usage chunk's), record.SourceUsage
	// (the final usage chunk), or record.SourceNone with Output 0 when the stream gave no
	// count. Source.Exact() tells whether PerEvent is set.
	Output int
	Source record.TokenSource
	// PerEvent[i] is the number of tokens the i-th added chunk carried, when the stream gave
	// exact per-event counts; nil otherwise.
	PerEvent []int
	// Span is the number of tokens generated after the first text event, up to and including
	// the last one: tpot_token's denominator. Nil without per-event counts or with fewer than
	// two text events.
	Span *int
	// TextEvents is the number of added chunks that were text events.
	TextEvents int

	// The counts each source gave, nil where the stream did not give it, so that a
	// disagreement stays visible.
	FromIDs        *int // sum of len(token_ids) over all chunks
	FromCumulative *int // the last cumulative completion_tokens, when cumulative usage was trusted
	FromUsage      *int // completion_tokens of the final usage
	// StreamedIDs is true when the stream carried token ids: some chunk had a token_ids field.
	// It says what the server delivered, whether or not return_token_ids was asked for, and
	// whether or not the ids were complete enough to count per event.
	StreamedIDs bool
	// StreamedCumulative is true when the stream carried usage per event: every chunk with
	// choices (at least two) had a usage, and not all of them were zeros (ollama puts a zeroed
	// usage on every chunk with include_usage, which is not continuous_usage_stats). Like
	// StreamedIDs it says what was delivered, not whether the counts passed the checks above.
	StreamedCumulative bool
	// Usage is the final usage as trusted (see Tally); nil when there was none.
	Usage *Usage
	// PromptTokens is the final usage's prompt_tokens, or the last non-zero one seen.
	PromptTokens *int
	// Notes says, in words, why a source was not used or where two sources disagree.
	Notes []string
}

// Counts returns the conclusions from the chunks added so far.
func (t *Tally) Counts() Counts {
	var c Counts
	if t.negative > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d chunks carried a usage with a negative count; it was ignored", t.negative))
	}
	first, last := -1, -1
	for i, s := range t.slots {
		if s.text {
			if first < 0 {
				first = i
			}
			last = i
			c.TextEvents++
		}
	}

	// Final usage: the choices:[] chunk, else usage on the finish chunk.
	var final, onFinish *Usage
	sawZero := false
	for _, s := range t.slots {
		if s.usage == nil {
			continue
		}
		if s.usage.zero() {
			sawZero = true
			continue
		}
		if !s.choices {
			final = s.usage
		} else if s.finish {
			onFinish = s.usage
		}
	}
	switch {
	case final != nil:
		if onFinish != nil && onFinish.CompletionTokens != final.CompletionTokens {
			c.Notes = append(c.Notes, fmt.Sprintf("the finish chunk's usage says %d completion tokens, the final usage chunk %d; the final usage chunk is used", onFinish.CompletionTokens, final.CompletionTokens))
		}
	case onFinish != nil:
		final = onFinish
	}
	if final != nil {
		u := *final
		c.Usage = &u
		c.FromUsage = record.Int(u.CompletionTokens)
		c.PromptTokens = record.Int(u.PromptTokens)
	} else {
		for _, s := range t.slots {
			if s.usage != nil && s.usage.PromptTokens > 0 {
				c.PromptTokens = record.Int(s.usage.PromptTokens)
			}
		}
	}

	ids, idsOK := t.perEventIDs()
	c.StreamedIDs = ids != nil
	c.StreamedCumulative = t.usagePerEvent()
	if ids != nil {
		sum := 0
		for _, n := range ids {
			sum += n
		}
		c.FromIDs = record.Int(sum)
	}
	cum, cumOK, why := t.perEventCumulative()
	if cumOK {
		c.FromCumulative = record.Int(lastCumulative(t.slots))
	} else if why != "" {
		c.Notes = append(c.Notes, why)
	}
	if sawZero && !cumOK && why == "" {
		c.Notes = append(c.Notes, "usage of all zeros on some chunks was ignored")
	}

	switch {
	case idsOK:
		c.PerEvent, c.Source, c.Output = ids, record.SourceTokenIDs, *c.FromIDs
		if c.FromUsage != nil && *c.FromUsage != *c.FromIDs {
			c.Notes = append(c.Notes, fmt.Sprintf("token ids count %d output tokens, usage %d", *c.FromIDs, *c.FromUsage))
		}
	case cumOK:
		c.PerEvent, c.Source, c.Output = cum, record.SourceUsageCont, *c.FromCumulative
	case c.FromUsage != nil:
		c.Source, c.Output = record.SourceUsage, *c.FromUsage
	default:
		c.Source = record.SourceNone
	}
	if ids != nil && !idsOK {
		c.Notes = append(c.Notes, "some text chunks carry no token ids; token ids are not used per event")
	}

	if c.PerEvent != nil && c.TextEvents >= 2 {
		n := 0
		for _, k := range c.PerEvent[first+1 : last+1] {
			n += k
		}
		c.Span = record.Int(n)
	}
	return c
}

// perEventIDs returns len(token_ids) per chunk when any chunk has token ids, and whether they
// are complete: every text chunk has a token_ids field, and most text chunks carry at least one
// id. A text chunk with an empty list is a real event that carries the rest of a token's text
// and no new token (a word split over two events), so it is allowed; a text chunk without the
// field, or a stream where most text chunks have none, means the server did not really count
// per event.
func (t *Tally) perEventIDs() ([]int, bool) {
	found := false
	for _, s := range t.slots {
		found = found || s.hasIDs
	}
	if !found {
		return nil, false
	}
	out := make([]int, len(t.slots))
	ok := true
	text, empty := 0, 0
	for i, s := range t.slots {
		out[i] = s.ids
		if !s.text {
			continue
		}
		text++
		if !s.hasIDs {
			ok = false
		}
		if s.ids == 0 {
			empty++
		}
	}
	return out, ok && 2*empty < text
}

// usagePerEvent reports whether every chunk with choices, at least two, carries a usage and
// not all of those usages are zeros.
func (t *Tally) usagePerEvent() bool {
	every, nonZero := t.usageOnEveryChunk()
	return every && nonZero
}

// usageOnEveryChunk reports whether every chunk with choices, at least two, carries a usage,
// and whether any of those usages is not all zeros.
func (t *Tally) usageOnEveryChunk() (every, nonZero bool) {
	withChoices, withUsage := 0, 0
	for _, s := range t.slots {
		if !s.choices {
			continue
		}
		withChoices++
		if s.usage != nil {
			withUsage++
			nonZero = nonZero || !s.usage.zero()
		}
	}
	return withChoices > 0 && withUsage == withChoices && withUsage >= 2, nonZero
}

// perEventCumulative returns the rise of cumulative completion_tokens per chunk when the
// stream really reports usage on every chunk; otherwise it says why not ("" when the stream
// simply has no per-chunk usage).
func (t *Tally) perEventCumulative() ([]int, bool, string) {
	every, nonZero := t.usageOnEveryChunk()
	if !every {
		return nil, false, ""
	}
	if !nonZero {
		return nil, false, "usage on every chunk is all zeros; it is not a per-event count"
	}
	out := make([]int, len(t.slots))
	prev := 0
	text, flat := 0, 0
	for i, s := range t.slots {
		if s.usage == nil || (!s.choices && s.usage.zero()) {
			continue
		}
		n := s.usage.CompletionTokens
		if n < prev {
			return nil, false, fmt.Sprintf("cumulative usage falls from %d to %d at chunk %d; it is not used per event", prev, n, i)
		}
		out[i] = n - prev
		prev = n
		if s.text {
			text++
			if out[i] == 0 {
				flat++
			}
		}
	}
	// A text chunk that does not raise the count carries the rest of a token's text (a word
	// split over two events); that happens, but a count that most text chunks leave flat is not
	// cumulative.
	if 2*flat >= text {
		return nil, false, fmt.Sprintf("%d of %d text chunks do not raise the cumulative usage; it is not used per event", flat, text)
	}
	return out, true, ""
}

// lastCumulative returns the last non-zero completion_tokens in the stream.
func lastCumulative(slots []slot) int {
	n := 0
	for _, s := range slots {
		if s.usage != nil && !s.usage.zero() {
			n = s.usage.CompletionTokens
		}
	}
	return n
}
