package tokens

import (
	"context"
	"fmt"
	"strings"
)

// filler is the text prompts are cut from: plain English prose, written for this project, with
// single spaces between words so that a prefix of k words grows by whole words.
const filler = `The morning train left the valley a little after six, and by the time it reached the ` +
	`coast the fog had lifted from the water. Most of the passengers were people who made the trip ` +
	`every week: a baker with two baskets of bread, a teacher marking papers with a green pen, an old ` +
	`man who read the same newspaper from the first page to the last. Outside the windows the fields ` +
	`gave way to low hills, then to a long line of pines bent by the wind. Near the station the town ` +
	`was already awake. Shop owners pulled up their shutters, a boy on a bicycle delivered milk, and ` +
	`the harbour smelled of rope, salt and diesel. The fishing boats had come in before dawn, and their ` +
	`crews were sorting the catch into crates of ice while gulls circled and complained overhead. At ` +
	`the end of the pier a small cafe served coffee in thick white cups. The owner knew every regular ` +
	`by name and most of them by their order. She liked to say that the weather decided everything in ` +
	`a place like this: when the boats could go out, when the tourists would come, and whether the ` +
	`road over the pass would stay open until spring. In the afternoon the wind usually turned, ` +
	`bringing clouds from the west and a light rain that nobody seemed to notice. Children walked home ` +
	`from school along the sea wall, counting the waves that broke over the rocks. By evening the lamps ` +
	`along the promenade came on one by one, and the last train of the day carried the same travellers ` +
	`back toward the valley, tired, quiet and a little sunburnt.`

var fillerWords = strings.Fields(filler)

// padUnits are the pieces appended, repeated, to make up the last few tokens. The first are one
// token in common tokenizers (a space and a letter is a whole word to BPE and SentencePiece
// alike); the rest serve tokenizers that count a space apart or a glued character as one token.
var padUnits = []string{" a", " x", " .", ".", ",", "a"}

// Synthesize returns a prompt of exactly n tokens by the Counter c, and n.
//
// The prompt is a prefix of a fixed English paragraph (repeated as often as n needs), starting
// at a word chosen by seed, so that different seeds give different prompts of the same length
// (and different prefixes, for a server's prefix cache) and equal seeds give equal prompts.
// The number of words is found by a search that alternates interpolation and bisection, so a
// slow counter such as a server's /tokenize is called O(log n) times; when no number of whole
// words counts exactly n, the last tokens are made up with single-character words (" a").
//
// The count is c's: with a Server counter that tokenizes with add_special_tokens (vLLM's
// default for /tokenize and for /v1/completions prompts), n includes the BOS token, which is
// how the server reports the prompt in usage.prompt_tokens; such a counter cannot make n=1,
// since the BOS token alone is not a prompt. For a chat request the server adds the chat
// template's tokens on top, unless the Counter tokenizes the prompt as a chat message.
//
// A counter that adds a fixed number of tokens to every text (a server's chat template, counted
// by its usage.prompt_tokens) has a floor: when one word already counts more than n, Synthesize
// returns a *FloorError. A counter whose counts shrink as the text grows cannot be searched,
// and Synthesize says so instead of returning a prompt of a length it cannot vouch for.
//
// It returns an error when the counter fails, ctx ends, n is below the counter's floor, the
// counts are not monotone, or no prefix with padding counts exactly n.
func Synthesize(ctx context.Context, c Counter, n int, seed int64) (string, int, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("synthesize %d tokens by %s: "+format, append([]any{n, c.Name()}, args...)...)
	}
	if n < 1 {
		return "", 0, fail("want at least 1 token")
	}
	s := &synth{ctx: ctx, c: c, start: int(uint64(seed) % uint64(len(fillerWords))), memo: map[int]int{}}

	// Bracket the answer: lo words count at most n, hi words more than n. One word is counted
	// first: it is the shortest prompt, and what it counts beyond a word's worth is the
	// counter's fixed overhead, which interpolation then starts from.
	lo := 1
	flo, err := s.count(lo)
	if err != nil {
		return "", 0, fail("%w", err)
	}
	switch {
	case flo == n:
		return s.text(lo), n, nil
	case flo > n:
		return "", 0, &FloorError{Want: n, Floor: flo, Counter: c.Name()}
	}
	hi := max(n, lo+1)
	fhi, err := s.count(hi)
	if err != nil {
		return "", 0, fail("%w", err)
	}
	for fhi <= n {
		if fhi == n {
			return s.text(hi), n, nil
		}
		if hi > 16*n+1024 {
			return "", 0, fail("%d words count only %d tokens", hi, fhi)
		}
		lo, flo = hi, fhi
		hi *= 2
		if fhi, err = s.count(hi); err != nil {
			return "", 0, fail("%w", err)
		}
	}
	for step := 0; hi-lo > 1; step++ {
		mid := lo + (hi-lo)/2
		if step%2 == 0 && fhi > flo {
			// Counts grow almost linearly in words; interpolation usually lands within a word
			// or two. Every other step bisects, which bounds the calls at 2·log2(n).
			mid = lo + int(float64(n-flo)*float64(hi-lo)/float64(fhi-flo))
		}
		mid = min(max(mid, lo+1), hi-1)
		fm, err := s.count(mid)
		if err != nil {
			return "", 0, fail("%w", err)
		}
		switch {
		case fm == n:
			return s.text(mid), n, nil
		case fm < n:
			lo, flo = mid, fm
		default:
			hi, fhi = mid, fm
		}
	}

	// lo words count fewer than n and lo+1 words more: make up the difference with padding.
	// If a tokenizer merges the padding with the last word, try a word shorter.
	for k := lo; k >= max(lo-2, 1); k-- {
		fk, err := s.count(k)
		if err != nil {
			return "", 0, fail("%w", err)
		}
		d := n - fk
		if d <= 0 {
			continue
		}
		base := s.text(k)
		if text, ok, err := s.pad(base, fk, d); err != nil {
			return "", 0, fail("%w", err)
		} else if ok {
			return text, n, nil
		}
	}
	if v, ok := s.memo[lo]; ok {
		flo = v
	}
	return "", 0, fail("no prefix of the filler text, padded, counts exactly %d (%d words count %d, %d words %d)", n, lo, flo, hi, fhi)
}

// pad makes up d tokens after base, which counts fb tokens. It measures what each pad unit adds
// once repeated, then tries a unit whose cost divides d, and a unit of cost u repeated d/u times
// followed by a one-token unit for the remainder; every candidate is counted before it is
// returned.
func (s *synth) pad(base string, fb, d int) (string, bool, error) {
	join := func(parts ...string) string {
		text := base + strings.Join(parts, "")
		if base == "" {
			text = strings.TrimLeft(text, " ")
		}
		return text
	}
	check := func(text string) (bool, error) {
		got, err := s.c.Count(s.ctx, text)
		return got == fb+d, err
	}
	// The units are measured as they are tried, so that the usual case, " a" costing one
	// token, takes two calls rather than one per unit: a counter may be a request to a server.
	cost := make([]int, len(padUnits))
	measure := func(i int) error {
		got, err := s.c.Count(s.ctx, join(padUnits[i], padUnits[i]))
		if err != nil {
			return err
		}
		cost[i] = (got - fb) / 2
		if (got-fb)%2 != 0 {
			cost[i] = 0 // the first repetition merges or splits differently: not a steady unit
		}
		return nil
	}
	for i, unit := range padUnits {
		if err := measure(i); err != nil {
			return "", false, err
		}
		if cost[i] > 0 && d%cost[i] == 0 {
			text := join(strings.Repeat(unit, d/cost[i]))
			if ok, err := check(text); err != nil || ok {
				return text, ok, err
			}
		}
	}
	for i, unit := range padUnits {
		if cost[i] <= 1 {
			continue
		}
		for j, one := range padUnits {
			if cost[j] != 1 {
				continue
			}
			text := join(strings.Repeat(unit, d/cost[i]), strings.Repeat(one, d%cost[i]))
			if ok, err := check(text); err != nil || ok {
				return text, ok, err
			}
		}
	}
	return "", false, nil
}

// synth holds one Synthesize call's state.
type synth struct {
	ctx   context.Context
	c     Counter
	start int
	memo  map[int]int
}

// text returns the first k words of the filler, starting at the seed's word and wrapping.
func (s *synth) text(k int) string {
	var b strings.Builder
	for i := 0; i < k; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fillerWords[(s.start+i)%len(fillerWords)])
	}
	return b.String()
}

// count returns the token count of text(k), asking the counter once per k.
func (s *synth) count(k int) (int, error) {
	if n, ok := s.memo[k]; ok {
		return n, nil
	}
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.c.Count(s.ctx, s.text(k))
	if err != nil {
		return 0, err
	}
	// The search trusts that more words never count fewer tokens; a counter that breaks this
	// (a server that answers at random, or counts something else) would send it astray.
	for k2, n2 := range s.memo {
		if (k2 < k && n2 > n) || (k2 > k && n2 < n) {
			return 0, fmt.Errorf("counts are not monotone: %d words count %d tokens, but %d words count %d", k2, n2, k, n)
		}
	}
	s.memo[k] = n
	return n, nil
}

// FloorError says that no prompt counts as few tokens as asked: the shortest one, a single
// word, already counts Floor. A counter that adds a fixed overhead to every text has such a
// floor: a server's chat template or special tokens, counted in its usage.prompt_tokens.
type FloorError struct {
	Want    int    // tokens asked for
	Floor   int    // tokens the shortest prompt counts
	Counter string // the counter's name
}

func (e *FloorError) Error() string {
	return fmt.Sprintf("tokens: synthesize %d tokens by %s: the shortest prompt, one word, already counts %d tokens (the fixed overhead of a template or special tokens is in every count): ask for at least %d",
		e.Want, e.Counter, e.Floor, e.Floor)
}
