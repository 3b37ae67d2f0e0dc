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
			return nil, fmt.Errorf("tokens: tiktoken encoding %q: %w", encoding, err)
		}
		encCache[encoding] = enc
	}
	return &Tiktoken{enc: enc, encoding: encoding}, nil
}

// Count returns the number of tokens in text. Special-token strings such as "<|endoftext|>"
// are counted as plain text.
func (t *Tiktoken) Count(_ context.Context, text string) (int, error) {
	return len(t.enc.EncodeOrdinary(text)), nil
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
		return 0, fmt.Errorf("tokens: %s: no Tokenize function", s.Name())
	}
	n, err := s.Tokenize(ctx, text)
	if err != nil {
		return 0, fmt.Errorf("tokens: %s: %w", s.Name(), err)
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
