package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Params sizes the tiny model. The zero value is not valid; start from DefaultParams.
type Params struct {
	// Seed drives every random weight: the same Params give the same bytes.
	Seed uint64
	// Embedding is the width of the residual stream (llama.embedding_length).
	Embedding int
	// Layers is the number of transformer blocks (llama.block_count).
	Layers int
	// Heads is the number of query heads; Embedding/Heads is the head size.
	Heads int
	// KVHeads is the number of key/value heads (grouped-query attention when below Heads).
	KVHeads int
	// FeedForward is the hidden width of each block's gated MLP.
	FeedForward int
	// Context is the training context length the model declares (llama.context_length); the
	// engine caps its context window to it.
	Context int
}

// DefaultParams returns the default tiny model: about 3.4 million parameters (6.8 MB of F16),
// which streams on the order of a hundred tokens per second on a small CPU.
func DefaultParams() Params {
	return Params{Seed: 1, Embedding: 256, Layers: 4, Heads: 4, KVHeads: 2, FeedForward: 512, Context: 8192}
}

// Validate reports the first inconsistency in p.
func (p Params) Validate() error {
	switch {
	case p.Embedding < 8:
		return fmt.Errorf("embedding %d, want at least 8", p.Embedding)
	case p.Layers < 1:
		return fmt.Errorf("layers %d, want at least 1", p.Layers)
	case p.Heads < 1 || p.Embedding%p.Heads != 0:
		return fmt.Errorf("heads %d must divide embedding %d", p.Heads, p.Embedding)
	case (p.Embedding/p.Heads)%2 != 0:
		return fmt.Errorf("head size %d must be even for rotary embeddings", p.Embedding/p.Heads)
	case p.KVHeads < 1 || p.Heads%p.KVHeads != 0:
		return fmt.Errorf("kv_heads %d must divide heads %d", p.KVHeads, p.Heads)
	case p.FeedForward < 1:
		return fmt.Errorf("ff %d, want at least 1", p.FeedForward)
	case p.Context < 16:
		return fmt.Errorf("ctx %d, want at least 16", p.Context)
	}
	return nil
}

// paramKeys are the names ParseParams accepts, in the order String prints them.
var paramKeys = []string{"embd", "layers", "heads", "kv_heads", "ff", "ctx", "seed"}

// String formats p in the syntax ParseParams reads.
func (p Params) String() string {
	return fmt.Sprintf("embd=%d,layers=%d,heads=%d,kv_heads=%d,ff=%d,ctx=%d,seed=%d",
		p.Embedding, p.Layers, p.Heads, p.KVHeads, p.FeedForward, p.Context, p.Seed)
}

// ParseParams applies a comma-separated list of key=value overrides to base, for example
// "embd=128,layers=2,ctx=4096". The keys are embd, layers, heads, kv_heads, ff, ctx and seed.
// The result is validated.
func ParseParams(s string, base Params) (Params, error) {
	p := base
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return base, fmt.Errorf("params: %q is not key=value", item)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return base, fmt.Errorf("params: %s: %w", k, err)
		}
		if k != "seed" && n > 1<<20 {
			return base, fmt.Errorf("params: %s=%d is too large for a tiny model", k, n)
		}
		switch strings.TrimSpace(k) {
		case "embd":
			p.Embedding = int(n)
		case "layers":
			p.Layers = int(n)
		case "heads":
			p.Heads = int(n)
		case "kv_heads":
			p.KVHeads = int(n)
		case "ff":
			p.FeedForward = int(n)
		case "ctx":
			p.Context = int(n)
		case "seed":
			p.Seed = n
		default:
			return base, fmt.Errorf("params: unknown key %q (known: %s)", k, strings.Join(paramKeys, ", "))
		}
	}
	if err := p.Validate(); err != nil {
		return base, err
	}
	return p, nil
}

// ParamCount returns the number of weights in the model p describes.
func (p Params) ParamCount() int {
	v := len(buildVocab().tokens)
	hd := p.Embedding / p.Heads
	perLayer := 2*p.Embedding + // the two norms
		2*p.Embedding*p.Embedding + // q and output
		2*p.Embedding*p.KVHeads*hd + // k and v
		3*p.Embedding*p.FeedForward
	return 2*v*p.Embedding + p.Embedding + p.Layers*perLayer
}

// ChatTemplate is the Jinja chat template the tiny model carries (ChatML). It is written
// exactly as in popular models so that ollama recognises it and installs its own ChatML
// template and stop strings; llama.cpp's server would render it as is.
const ChatTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// The weights that keep the special tokens from ever being generated. Dimension 0 of the
// residual stream is an "anchor": every token embedding has anchorScale·√Embedding there and no
// block writes to it (row 0 of attn_output and ffn_down is zero), so after the final RMS norm it
// is a large positive number at every position. A banned token's output row is bannedWeight at
// dimension 0 and zero elsewhere, so its logit is bannedWeight times that number: several
// hundred below zero. Allowed rows are zero at dimension 0, so their logits are random and of
// order one. No sampler setting can bridge that gap; every request runs to its token limit.
const (
	anchorScale  = 1.0
	bannedWeight = -64.0
)

// TinyLlama builds a llama-architecture model with random F16 weights from p: a SentencePiece
// vocabulary of whole English words (see Words), single characters and byte fallbacks, and
// an output layer that can never produce end-of-sequence or any other special token. It is a
// test fixture for engines, not a language model: its text is a random walk over the words.
func TinyLlama(p Params) (*File, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	v := buildVocab()
	nv := len(v.tokens)
	e, hd := p.Embedding, p.Embedding/p.Heads
	kvDim := p.KVHeads * hd
	rng := rand.New(rand.NewPCG(p.Seed, 0x72756e6e6572)) // "runner"

	f := &File{KV: []KV{
		{"general.architecture", "llama"},
		{"general.name", "runner-tiny"},
		{"general.description", fmt.Sprintf("random weights (%s), generated for engine tests; not a language model", p)},
		{"general.file_type", uint32(1)}, // all weights F16 (norms F32, as converters write them)
		{KeyAlignment, uint32(DefaultAlignment)},
		{"llama.vocab_size", uint32(nv)},
		{"llama.context_length", uint32(p.Context)},
		{"llama.embedding_length", uint32(e)},
		{"llama.block_count", uint32(p.Layers)},
		{"llama.feed_forward_length", uint32(p.FeedForward)},
		{"llama.attention.head_count", uint32(p.Heads)},
		{"llama.attention.head_count_kv", uint32(p.KVHeads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.dimension_count", uint32(hd)},
		{"llama.rope.freq_base", float32(10000)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", v.tokens},
		{"tokenizer.ggml.scores", v.scores},
		{"tokenizer.ggml.token_type", v.types},
		{"tokenizer.ggml.unknown_token_id", uint32(TokenUnknown)},
		{"tokenizer.ggml.bos_token_id", uint32(TokenBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokenEOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.ggml.add_space_prefix", true},
		{"tokenizer.chat_template", ChatTemplate},
	}}

	normal := func(std float64) float32 { return float32(rng.NormFloat64() * std) }
	ones := func(name string) {
		data := make([]byte, 4*e)
		for i := range e {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
		}
		f.Tensors = append(f.Tensors, Tensor{Name: name, Dims: []uint64{uint64(e)}, Type: TensorF32, Data: data})
	}
	// matrix adds a rows×cols F16 matrix (ggml dims [cols, rows]) whose element (r, c) is
	// at(r, c); the generator is called in row-major order, which fixes the random stream.
	matrix := func(name string, cols, rows int, at func(r, c int) float32) {
		data := make([]byte, 2*rows*cols)
		for r := range rows {
			for c := range cols {
				binary.LittleEndian.PutUint16(data[2*(r*cols+c):], HalfFromFloat32(at(r, c)))
			}
		}
		f.Tensors = append(f.Tensors, Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: TensorF16, Data: data})
	}
	// input reads the residual stream: it ignores the anchor, so attention and the MLP see only
	// the random part.
	input := func(std float64) func(r, c int) float32 {
		return func(r, c int) float32 {
			if c == 0 {
				return 0
			}
			return normal(std)
		}
	}
	// output writes the residual stream: never into the anchor.
	output := func(std float64) func(r, c int) float32 {
		return func(r, c int) float32 {
			if r == 0 {
				return 0
			}
			return normal(std)
		}
	}

	anchor := float32(anchorScale * math.Sqrt(float64(e)))
	matrix("token_embd.weight", e, nv, func(r, c int) float32 {
		if c == 0 {
			return anchor
		}
		return normal(1)
	})
	in := 1 / math.Sqrt(float64(e))
	for l := range p.Layers {
		blk := fmt.Sprintf("blk.%d.", l)
		ones(blk + "attn_norm.weight")
		matrix(blk+"attn_q.weight", e, e, input(in))
		matrix(blk+"attn_k.weight", e, kvDim, input(in))
		matrix(blk+"attn_v.weight", e, kvDim, input(in))
		matrix(blk+"attn_output.weight", e, e, output(0.5/math.Sqrt(float64(e))))
		ones(blk + "ffn_norm.weight")
		matrix(blk+"ffn_gate.weight", e, p.FeedForward, input(in))
		matrix(blk+"ffn_up.weight", e, p.FeedForward, input(in))
		matrix(blk+"ffn_down.weight", p.FeedForward, e, output(0.5/math.Sqrt(float64(p.FeedForward))))
	}
	ones("output_norm.weight")
	// After the norm the non-anchor part of the state has length about √(e/2); this spread
	// gives the allowed tokens logits with a standard deviation of about 2, enough to vary.
	spread := 3 / math.Sqrt(float64(e))
	matrix("output.weight", e, nv, func(r, c int) float32 {
		switch {
		case !v.sampled[r] && c == 0:
			return bannedWeight
		case !v.sampled[r] || c == 0:
			return 0
		}
		return normal(spread)
	})
	return f, nil
}

// WriteTinyLlama builds the model for p and writes it to w as GGUF.
func WriteTinyLlama(w io.Writer, p Params) error {
	f, err := TinyLlama(p)
	if err != nil {
		return err
	}
	return Write(w, f)
}

// WriteTinyLlamaFile writes the model for p to path, atomically: a reader never sees a partial
// file.
func WriteTinyLlamaFile(path string, p Params) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		// The error names the temporary file; the path asked for comes first.
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = WriteTinyLlama(tmp, p); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return nil
}
