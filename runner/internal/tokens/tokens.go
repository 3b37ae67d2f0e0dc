// Package tokens counts tokens and writes prompts of an exact token length.
//
// A Counter counts the tokens of a text: Tiktoken with a local BPE encoding (an approximation
// of a model's own tokenizer; nothing is downloaded, the encodings are compiled in), or Server
// over a function that asks the model server (vLLM's POST /tokenize). Synthesize writes a
// prompt of exactly n tokens by a given Counter.
package tokens

import (
	"context"
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts the tokens of a text.
type Counter interface {
	// Count returns the number of tokens in text.
	Count(ctx context.Context, text string) (int, error)
	// Name names the tokenizer, for results: e.g. "tiktoken:cl100k_base" or "server".
	Name() string
}

// DefaultEncoding is the tiktoken encoding used when none is named.
const DefaultEncoding = "cl100k_base"

// Tiktoken counts with a tiktoken BPE encoding loaded from the encodings compiled into the
// binary, so it works without a network and never writes a cache.
type Tiktoken struct {
	enc      *tiktoken.Tiktoken
	encoding string
}

var _ Counter = (*Tiktoken)(nil)

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encCache   = map[string]*tiktoken.Tiktoken{}
)

// NewTiktoken returns a Tiktoken counter for the named encoding (cl100k_base, o200k_base,
// p50k_base, r50k_base, p50k_edit); "" means DefaultEncoding. Loading an encoding the first
// time takes a fraction of a second; later calls share it.
func NewTiktoken(encoding string) (*Tiktoken, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	loaderOnce.Do(func() {
		// The library's default loader downloads the BPE file and caches it under
		// TIKTOKEN_CACHE_DIR; the offline loader reads the copy embedded in the binary.
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	})
	encMu.Lock()
	defer encMu.Unlock()
	enc := encCache[encoding]
	if enc == nil {
		var err error
		enc, err = tiktoken.GetEncoding(encoding)
		if err != nil {
			return nil, fmt.Errorf("tiktoken encoding %q: %w", encoding, err)
		}
		encCache[encoding] = enc
	}
	return &Tiktoken{enc: enc, encoding: encoding}, nil
}

// Count returns the number of tokens in text. Special-token strings such as "<|endoftext|>"
// are counted as plain text.
//
// The text is encoded in pieces (see splitText), so that the cost grows linearly with its
// length and ctx is looked at between pieces of a few kilobytes: Count returns ctx's error,
// wrapped, within milliseconds of ctx ending. Ordinary text counts exactly as the encoding counts
// it whole. A run of more than maxRun bytes without whitespace or punctuation between letters (or
// of whitespace), or a stretch of 2·chunkSize bytes without a single space between words, is
// cut, which can add about one token per cut: about 1 in 256 bytes of such a run (measured:
// 0.1 % on random letters or base64), and nothing for words shorter than that.
func (t *Tiktoken) Count(ctx context.Context, text string) (int, error) {
	n, done := 0, 0
	for done < len(text) {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("%s: count stopped after %d of %d bytes: %w", t.Name(), done, len(text), err)
		}
		end := done + splitText(text[done:])
		n += len(t.enc.EncodeOrdinary(text[done:end]))
		done = end
	}
	return n, nil
}

const (
	// maxRun bounds the bytes of a run without whitespace (or of whitespace) that are encoded as
	// one. The encoder's pre-tokenizer makes such a run one word, and its byte-pair merge costs
	// the square of a word's length: a 100,000-character run took seconds, a longer one
	// minutes. Real words and tokens are far shorter than 256 bytes.
	maxRun = 256
	// chunkSize is how much text is encoded, about, between two looks at the context.
	chunkSize = 4096
)

// splitText returns the length of the first piece of text to encode on its own. The piece
// ends at the first of these places:
//   - the end of text;
//   - once the piece has chunkSize bytes, a space between two non-space characters;
//   - inside a run of non-space (or of space) characters that has grown to maxRun bytes, the
//     run's last punctuation mark between two letters ("好，我", "a/b"), else that point;
//   - 2·chunkSize bytes, when the piece has not ended before.
//
// Every tiktoken encoding's pre-tokenizer starts a new piece at such a space (" word", " .")
// and at such a punctuation mark, and ends the piece before it with the letters, so those cuts
// change no count; an apostrophe is not such a mark ("it's" is one piece in o200k_base).
// Pieces end on rune boundaries.
func splitText(text string) int {
	run, runSpace := 0, false // bytes in the current run, and whether it is whitespace
	cut := 0                  // the run's last cut that changes no count; 0 for none
	prevSpace := true         // whether the previous rune was whitespace; true at the start
	prevLetter := false       // whether the previous rune was a letter
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		space := unicode.IsSpace(r)
		if i > 0 {
			switch {
			case space != runSpace:
				run, cut = 0, 0
			case run >= maxRun:
				if cut > 0 {
					return cut
				}
				return i
			}
			if i >= 2*chunkSize {
				return i
			}
			next, _ := utf8.DecodeRuneInString(text[i+size:])
			if i >= chunkSize && r == ' ' && !prevSpace && i+size < len(text) && !unicode.IsSpace(next) {
				return i
			}
			if prevLetter && unicode.IsPunct(r) && r != '\'' && r != '’' && unicode.IsLetter(next) {
				cut = i
			}
		}
		run += size
		runSpace, prevSpace, prevLetter = space, space, unicode.IsLetter(r)
		i += size
	}
	return len(text)
}

// Name returns "tiktoken:" and the encoding's name.
func (t *Tiktoken) Name() string { return "tiktoken:" + t.encoding }

// Encoding returns the encoding's name, e.g. "cl100k_base".
func (t *Tiktoken) Encoding() string { return t.encoding }

// Server counts by calling Tokenize, typically a closure over the openai client's /tokenize
// call. What it counts is what Tokenize counts: for the count of a /v1/completions prompt as
// the server bills it in usage.prompt_tokens, Tokenize should send the prompt with
// add_special_tokens true (vLLM's default), so that a BOS token is included.
type Server struct {
	// Tokenize returns the server's token count for text.
	Tokenize func(ctx context.Context, text string) (int, error)
	// Label is what Name returns; "server" when empty.
	Label string
}

var _ Counter = (*Server)(nil)

// Count calls Tokenize.
func (s *Server) Count(ctx context.Context, text string) (int, error) {
	if s.Tokenize == nil {
		return 0, fmt.Errorf("%s: no Tokenize function", s.Name())
	}
	n, err := s.Tokenize(ctx, text)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.Name(), err)
	}
	return n, nil
}

// Name returns the Label, or "server".
func (s *Server) Name() string {
	if s.Label == "" {
		return "server"
	}
	return s.Label
}

// Memo counts with Counter and remembers every count by its text, so that a text counted again
// (by another Synthesize call, or a check of the prompt it made) costs no second call. It is
// meant for a slow counter, such as one request to a server per count. It is not safe for
// concurrent use.
type Memo struct {
	Counter
	counts map[string]int
	// Calls counts the calls that reached Counter.
	Calls int
}

var _ Counter = (*Memo)(nil)

// NewMemo returns a Memo over c.
func NewMemo(c Counter) *Memo { return &Memo{Counter: c, counts: map[string]int{}} }

// Count returns the remembered count of text, or asks the Counter and remembers its answer.
// Errors are not remembered.
func (m *Memo) Count(ctx context.Context, text string) (int, error) {
	if n, ok := m.counts[text]; ok {
		return n, nil
	}
	m.Calls++
	n, err := m.Counter.Count(ctx, text)
	if err != nil {
		return 0, err
	}
	m.counts[text] = n
	return n, nil
}
