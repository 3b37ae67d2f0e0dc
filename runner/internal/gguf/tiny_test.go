package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// small is a model size that keeps the tests fast.
var small = Params{Seed: 3, Embedding: 64, Layers: 2, Heads: 4, KVHeads: 2, FeedForward: 96, Context: 512}

func TestTinyLlamaMetadata(t *testing.T) {
	p := small
	f, err := TinyLlama(p)
	if err != nil {
		t.Fatal(err)
	}
	b := encode(t, f)
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	nv := len(buildVocab().tokens)
	// The keys llama.cpp needs to load a llama model with a SentencePiece vocabulary, and
	// their types: llama.cpp rejects a key of the wrong type.
	want := map[string]any{
		"general.architecture":                   "llama",
		"general.alignment":                      uint32(32),
		"general.file_type":                      uint32(1),
		"llama.context_length":                   uint32(512),
		"llama.embedding_length":                 uint32(64),
		"llama.block_count":                      uint32(2),
		"llama.feed_forward_length":              uint32(96),
		"llama.attention.head_count":             uint32(4),
		"llama.attention.head_count_kv":          uint32(2),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.dimension_count":             uint32(16),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(nv),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.unknown_token_id":        uint32(0),
		"tokenizer.ggml.bos_token_id":            uint32(1),
		"tokenizer.ggml.eos_token_id":            uint32(2),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
		"tokenizer.chat_template":                ChatTemplate,
	}
	for k, w := range want {
		v, ok := got.Get(k)
		if !ok {
			t.Errorf("missing %s", k)
			continue
		}
		if !reflect.DeepEqual(v, w) {
			t.Errorf("%s = %#v, want %#v", k, v, w)
		}
	}
	tokens, _ := got.Get("tokenizer.ggml.tokens")
	scores, _ := got.Get("tokenizer.ggml.scores")
	types, _ := got.Get("tokenizer.ggml.token_type")
	if n := len(tokens.([]string)); n != nv || len(scores.([]float32)) != nv || len(types.([]int32)) != nv {
		t.Errorf("tokenizer arrays have %d tokens, %d scores, %d types; want %d each", n, len(scores.([]float32)), len(types.([]int32)), nv)
	}

	// Every tensor llama.cpp's llama loader asks for, with ggml's dimension order.
	type shape struct {
		dims []uint64
		typ  TensorType
	}
	e := uint64(64)
	shapes := map[string]shape{
		"token_embd.weight":  {[]uint64{e, uint64(nv)}, TensorF16},
		"output_norm.weight": {[]uint64{e}, TensorF32},
		"output.weight":      {[]uint64{e, uint64(nv)}, TensorF16},
	}
	for l := range 2 {
		blk := "blk." + itoa(l) + "."
		shapes[blk+"attn_norm.weight"] = shape{[]uint64{e}, TensorF32}
		shapes[blk+"ffn_norm.weight"] = shape{[]uint64{e}, TensorF32}
		for name, dims := range map[string][]uint64{
			"attn_q": {e, e}, "attn_k": {e, 32}, "attn_v": {e, 32}, "attn_output": {e, e},
			"ffn_gate": {e, 96}, "ffn_up": {e, 96}, "ffn_down": {96, e},
		} {
			shapes[blk+name+".weight"] = shape{dims, TensorF16}
		}
	}
	if len(got.Tensors) != len(shapes) {
		t.Errorf("%d tensors, want %d", len(got.Tensors), len(shapes))
	}
	var elems uint64
	for _, tn := range got.Tensors {
		s, ok := shapes[tn.Name]
		if !ok {
			t.Errorf("unexpected tensor %s", tn.Name)
			continue
		}
		if !reflect.DeepEqual(tn.Dims, s.dims) || tn.Type != s.typ {
			t.Errorf("%s is %v %s, want %v %s", tn.Name, tn.Dims, tn.Type, s.dims, s.typ)
		}
		elems += tn.Elements()
	}
	if int(elems) != p.ParamCount() {
		t.Errorf("tensors hold %d elements, ParamCount says %d", elems, p.ParamCount())
	}
}

func TestTinyLlamaDeterministic(t *testing.T) {
	sum := func(p Params) [32]byte {
		f, err := TinyLlama(p)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(encode(t, f))
	}
	a, b := sum(small), sum(small)
	if a != b {
		t.Errorf("the same params gave different files")
	}
	other := small
	other.Seed++
	if sum(other) == a {
		t.Errorf("a different seed gave the same file")
	}

	// Only the weights (and the description that names the seed) depend on the seed.
	fa, _ := TinyLlama(small)
	fb, _ := TinyLlama(other)
	for i := range fa.KV {
		if fa.KV[i].Key == "general.description" {
			continue
		}
		if !reflect.DeepEqual(fa.KV[i], fb.KV[i]) {
			t.Errorf("metadata %s depends on the seed", fa.KV[i].Key)
		}
	}
	if bytes.Equal(fa.Tensor("output.weight").Data, fb.Tensor("output.weight").Data) {
		t.Errorf("output weights do not depend on the seed")
	}
}

func TestWriteTinyLlamaFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := WriteTinyLlamaFile(path, small); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := TinyLlama(small)
	if !reflect.DeepEqual(f.KV, want.KV) || len(f.Tensors) != len(want.Tensors) {
		t.Errorf("file content differs from TinyLlama")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files in the folder, want only the model (no temporary left behind)", len(entries))
	}
	bad := small
	bad.Heads = 3
	if err := WriteTinyLlamaFile(filepath.Join(t.TempDir(), "x.gguf"), bad); err == nil {
		t.Errorf("invalid params were accepted")
	}
}

func TestVocab(t *testing.T) {
	v := buildVocab()
	index := make(map[string]int, len(v.tokens))
	for i, tok := range v.tokens {
		if j, dup := index[tok]; dup {
			t.Fatalf("token %q at %d and %d", tok, j, i)
		}
		index[tok] = i
	}
	if v.tokens[TokenUnknown] != "<unk>" || v.tokens[TokenBOS] != "<s>" || v.tokens[TokenEOS] != "</s>" {
		t.Errorf("special tokens are %q", v.tokens[:3])
	}
	for b := range 256 {
		tok := "<0x" + strings.ToUpper(string("0123456789abcdef"[b>>4])+string("0123456789abcdef"[b&15])) + ">"
		i, ok := index[tok]
		if !ok || v.types[i] != tokenByte {
			t.Errorf("byte token %s missing or of the wrong type", tok)
		}
	}
	for c := byte('!'); c <= '~'; c++ {
		if _, ok := index[string(c)]; !ok {
			t.Errorf("single character %q missing", c)
		}
	}
	seen := map[string]bool{}
	for _, w := range Words() {
		if seen[w] {
			t.Errorf("word %q listed twice", w)
		}
		seen[w] = true
		if w != strings.ToLower(w) || strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) {
			t.Errorf("word %q is not lowercase ASCII", w)
		}
		i, ok := index[spaceMark+w]
		if !ok || !v.sampled[i] {
			t.Errorf("word %q is not a generated token", w)
		}
		for n := 1; n < len(w); n++ {
			if _, ok := index[spaceMark+w[:n]]; !ok {
				t.Errorf("prefix %q of %q missing: the word could not be merged", w[:n], w)
			}
		}
	}
	// Exactly the whole words and the punctuation marks may be generated.
	var sampled int
	for i, s := range v.sampled {
		if !s {
			continue
		}
		sampled++
		tok := v.tokens[i]
		if v.types[i] != tokenNormal {
			t.Errorf("generated token %q has type %d", tok, v.types[i])
		}
		if !seen[strings.TrimPrefix(tok, spaceMark)] && !strings.Contains(sampledPunctuation, tok) {
			t.Errorf("token %q is generated but is neither a word nor punctuation", tok)
		}
	}
	if sampled != len(Words())+len(sampledPunctuation) {
		t.Errorf("%d generated tokens, want %d", sampled, len(Words())+len(sampledPunctuation))
	}
}

func TestParseParams(t *testing.T) {
	def := DefaultParams()
	tests := []struct {
		in   string
		want Params
		err  string
	}{
		{"", def, ""},
		{"embd=128, layers=2", Params{Seed: 1, Embedding: 128, Layers: 2, Heads: 4, KVHeads: 2, FeedForward: 512, Context: 8192}, ""},
		{def.String(), def, ""},
		{"seed=9,ctx=1024,ff=64,kv_heads=1,heads=2", Params{Seed: 9, Embedding: 256, Layers: 4, Heads: 2, KVHeads: 1, FeedForward: 64, Context: 1024}, ""},
		{"embd", def, "not key=value"},
		{"depth=3", def, "unknown key"},
		{"embd=-1", def, "embd"},
		{"heads=3", def, "must divide embedding"},
		{"kv_heads=3", def, "must divide heads"},
		{"embd=20,heads=4", def, "must be even"},
		{"ctx=8", def, "at least 16"},
		{"embd=99999999", def, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseParams(tt.in, def)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseParams(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseParams(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestBannedTokensNeverWin runs the model with a reference implementation of llama's forward
// pass and checks, at every position of prompts made of arbitrary tokens (special and byte
// tokens included) and of sampled continuations, that every token the vocabulary marks as not
// generated has a logit at least 100 below the best generated one: even at temperature 2 its
// probability is below e⁻⁵⁰, so end-of-sequence can never end a request early.
func TestBannedTokensNeverWin(t *testing.T) {
	for _, p := range []Params{small, DefaultParams()} {
		steps := 96
		if testing.Short() || p.Embedding > 64 {
			steps = 24
		}
		f, err := TinyLlama(p)
		if err != nil {
			t.Fatal(err)
		}
		m := loadReference(t, f, p)
		v := buildVocab()
		rng := rand.New(rand.NewPCG(42, 0))
		ctx := make([]int, 0, steps)
		ctx = append(ctx, TokenBOS)
		for range 8 { // a prompt of arbitrary tokens
			ctx = append(ctx, rng.IntN(len(v.tokens)))
		}
		m.reset()
		var worst float64 = math.Inf(1)
		for pos := 0; pos < steps; pos++ {
			if pos >= len(ctx) {
				t.Fatalf("context ran out")
			}
			logits := m.forward(ctx[pos], pos)
			best, bestBanned := math.Inf(-1), math.Inf(-1)
			for i, l := range logits {
				if v.sampled[i] {
					best = math.Max(best, float64(l))
				} else {
					bestBanned = math.Max(bestBanned, float64(l))
				}
			}
			worst = math.Min(worst, best-bestBanned)
			if best-bestBanned < 100 {
				t.Fatalf("%s: position %d: a banned token is only %.1f below the best generated token", p, pos, best-bestBanned)
			}
			if pos == len(ctx)-1 {
				ctx = append(ctx, sample(logits, rng))
			}
		}
		t.Logf("%s: smallest gap between the best generated and the best banned logit over %d positions: %.0f", p, steps, worst)
	}
}

// sample draws a token from softmax(logits) at temperature 1.
func sample(logits []float32, rng *rand.Rand) int {
	maxL := float32(math.Inf(-1))
	for _, l := range logits {
		maxL = max(maxL, l)
	}
	var sum float64
	w := make([]float64, len(logits))
	for i, l := range logits {
		w[i] = math.Exp(float64(l - maxL))
		sum += w[i]
	}
	r := rng.Float64() * sum
	for i := range w {
		r -= w[i]
		if r <= 0 {
			return i
		}
	}
	return len(w) - 1
}

// reference is a plain float32 implementation of the llama forward pass (RMS norm, rotary
// embeddings, grouped-query causal attention, SiLU-gated MLP) over the model's own tensors.
type reference struct {
	p                   Params
	emb, out            [][]float32
	outNorm             []float32
	layers              []refLayer
	keys, values        [][][]float32 // [layer][position] → kvDim
	hd, kvDim, nv, nRep int
}

type refLayer struct {
	attnNorm, ffnNorm          []float32
	q, k, v, o, gate, up, down [][]float32
}

func loadReference(t *testing.T, f *File, p Params) *reference {
	t.Helper()
	rows := func(name string) [][]float32 {
		tn := f.Tensor(name)
		if tn == nil {
			t.Fatalf("no tensor %s", name)
		}
		cols, n := int(tn.Dims[0]), int(tn.Dims[1])
		out := make([][]float32, n)
		for r := range out {
			out[r] = make([]float32, cols)
			for c := range cols {
				out[r][c] = Float32FromHalf(binary.LittleEndian.Uint16(tn.Data[2*(r*cols+c):]))
			}
		}
		return out
	}
	vec := func(name string) []float32 {
		tn := f.Tensor(name)
		if tn == nil {
			t.Fatalf("no tensor %s", name)
		}
		out := make([]float32, tn.Dims[0])
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(tn.Data[4*i:]))
		}
		return out
	}
	m := &reference{p: p, emb: rows("token_embd.weight"), out: rows("output.weight"), outNorm: vec("output_norm.weight")}
	m.hd = p.Embedding / p.Heads
	m.kvDim = p.KVHeads * m.hd
	m.nv = len(m.emb)
	m.nRep = p.Heads / p.KVHeads
	for l := range p.Layers {
		blk := "blk." + itoa(l) + "."
		m.layers = append(m.layers, refLayer{
			attnNorm: vec(blk + "attn_norm.weight"), ffnNorm: vec(blk + "ffn_norm.weight"),
			q: rows(blk + "attn_q.weight"), k: rows(blk + "attn_k.weight"), v: rows(blk + "attn_v.weight"),
			o: rows(blk + "attn_output.weight"), gate: rows(blk + "ffn_gate.weight"),
			up: rows(blk + "ffn_up.weight"), down: rows(blk + "ffn_down.weight"),
		})
	}
	return m
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func (m *reference) reset() {
	m.keys = make([][][]float32, m.p.Layers)
	m.values = make([][][]float32, m.p.Layers)
}

func rmsNorm(x, g []float32) []float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+1e-5))
	out := make([]float32, len(x))
	for i := range x {
		out[i] = x[i] * scale * g[i]
	}
	return out
}

func matVec(w [][]float32, x []float32) []float32 {
	out := make([]float32, len(w))
	for r, row := range w {
		var s float32
		for c, v := range row {
			s += v * x[c]
		}
		out[r] = s
	}
	return out
}

// rope rotates each head's adjacent pairs by position·base^(−2i/hd) (llama's "normal" mode).
func rope(x []float32, hd, pos int) {
	for h := 0; h < len(x); h += hd {
		for i := 0; i < hd; i += 2 {
			theta := float64(pos) * math.Pow(10000, -float64(i)/float64(hd))
			s, c := math.Sincos(theta)
			a, b := float64(x[h+i]), float64(x[h+i+1])
			x[h+i] = float32(a*c - b*s)
			x[h+i+1] = float32(a*s + b*c)
		}
	}
}

func (m *reference) forward(tok, pos int) []float32 {
	x := append([]float32(nil), m.emb[tok]...)
	for l := range m.layers {
		ly := &m.layers[l]
		h := rmsNorm(x, ly.attnNorm)
		q, k, v := matVec(ly.q, h), matVec(ly.k, h), matVec(ly.v, h)
		rope(q, m.hd, pos)
		rope(k, m.hd, pos)
		m.keys[l] = append(m.keys[l], k)
		m.values[l] = append(m.values[l], v)
		att := make([]float32, m.p.Embedding)
		for head := range m.p.Heads {
			kvh := head / m.nRep
			qh := q[head*m.hd : (head+1)*m.hd]
			scores := make([]float64, pos+1)
			maxS := math.Inf(-1)
			for j := 0; j <= pos; j++ {
				kj := m.keys[l][j][kvh*m.hd : (kvh+1)*m.hd]
				var s float64
				for i := range qh {
					s += float64(qh[i]) * float64(kj[i])
				}
				scores[j] = s / math.Sqrt(float64(m.hd))
				maxS = math.Max(maxS, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - maxS)
				sum += scores[j]
			}
			for j := range scores {
				vj := m.values[l][j][kvh*m.hd : (kvh+1)*m.hd]
				w := float32(scores[j] / sum)
				for i := range vj {
					att[head*m.hd+i] += w * vj[i]
				}
			}
		}
		for i, d := range matVec(ly.o, att) {
			x[i] += d
		}
		h = rmsNorm(x, ly.ffnNorm)
		g, u := matVec(ly.gate, h), matVec(ly.up, h)
		for i := range g {
			g[i] = g[i] / (1 + float32(math.Exp(float64(-g[i])))) * u[i]
		}
		for i, d := range matVec(ly.down, g) {
			x[i] += d
		}
	}
	return matVec(m.out, rmsNorm(x, m.outNorm))
}
