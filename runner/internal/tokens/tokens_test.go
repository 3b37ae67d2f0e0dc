package tokens

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// words counts whitespace-separated words, plus bos tokens, as a stand-in for a server's
// tokenizer; perWord > 1 makes every word several tokens. It counts its calls.
type words struct {
	bos, perWord int
	calls        int
}

func (w *words) Count(_ context.Context, text string) (int, error) {
	w.calls++
	per := max(w.perWord, 1)
	return w.bos + per*len(strings.Fields(text)), nil
}

func (w *words) Name() string { return "words" }

var _ Counter = (*words)(nil)

func tiktokenCounter(t testing.TB) *Tiktoken {
	t.Helper()
	tk, err := NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTiktokenCount(t *testing.T) {
	tk := tiktokenCounter(t)
	if tk.Name() != "tiktoken:cl100k_base" || tk.Encoding() != DefaultEncoding {
		t.Errorf("Name() = %q, Encoding() = %q", tk.Name(), tk.Encoding())
	}
	// Counts checked against the reference tokenizer's cl100k_base vocabulary.
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Hello, world!", 4},
		{"<|endoftext|>", 7}, // a special token's text counts as plain text
	}
	for _, tt := range tests {
		got, err := tk.Count(context.Background(), tt.text)
		if err != nil || got != tt.want {
			t.Errorf("Count(%q) = %d, %v; want %d", tt.text, got, err, tt.want)
		}
	}
	if _, err := NewTiktoken("no_such_encoding"); err == nil {
		t.Error("NewTiktoken accepted an unknown encoding")
	}
	o200, err := NewTiktoken("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	if o200.Name() != "tiktoken:o200k_base" {
		t.Errorf("Name() = %q", o200.Name())
	}
}

// TestTiktokenOffline loads the encoding in a fresh process with no usable network and an
// empty TIKTOKEN_CACHE_DIR: it must count, and must leave the cache directory empty (the
// downloading loader would have written its file there).
func TestTiktokenOffline(t *testing.T) {
	if os.Getenv("TOKENS_OFFLINE_CHILD") == "1" {
		tk, err := NewTiktoken("")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := tk.Count(context.Background(), "hello world"); n != 2 {
			t.Fatalf("Count = %d, want 2", n)
		}
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTiktokenOffline$", "-test.v")
	cmd.Env = append(os.Environ(),
		"TOKENS_OFFLINE_CHILD=1",
		"TIKTOKEN_CACHE_DIR="+cache,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=",
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTiktokenOffline") {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("TIKTOKEN_CACHE_DIR got %d entries; the encoding was fetched, not loaded offline", len(entries))
	}
}

func TestServerCounter(t *testing.T) {
	s := &Server{Tokenize: func(_ context.Context, text string) (int, error) { return 1 + len(strings.Fields(text)), nil }}
	if n, err := s.Count(context.Background(), "a b"); n != 3 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
	if s.Name() != "server" {
		t.Errorf("Name() = %q", s.Name())
	}
	boom := errors.New("503")
	s = &Server{Label: "vllm:/tokenize", Tokenize: func(context.Context, string) (int, error) { return 0, boom }}
	if _, err := s.Count(context.Background(), "x"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "vllm:/tokenize") {
		t.Errorf("Count error = %v", err)
	}
	if _, err := (&Server{}).Count(context.Background(), "x"); err == nil {
		t.Error("a Server without Tokenize counted")
	}
}

var sizes = []int{1, 2, 16, 100, 900, 4000}

func TestSynthesizeTiktoken(t *testing.T) {
	tk := tiktokenCounter(t)
	for _, seed := range []int64{0, 7} {
		for _, n := range sizes {
			text, got, err := Synthesize(context.Background(), tk, n, seed)
			if err != nil {
				t.Fatalf("n=%d seed=%d: %v", n, seed, err)
			}
			check, _ := tk.Count(context.Background(), text)
			if got != n || check != n {
				t.Errorf("n=%d seed=%d: returned %d, text counts %d", n, seed, got, check)
			}
		}
	}
}

func TestSynthesizeWords(t *testing.T) {
	for _, bos := range []int{0, 1} {
		for _, n := range sizes {
			if n <= bos {
				continue
			}
			w := &words{bos: bos}
			text, got, err := Synthesize(context.Background(), w, n, 3)
			if err != nil {
				t.Fatalf("bos=%d n=%d: %v", bos, n, err)
			}
			calls := w.calls
			check, _ := w.Count(context.Background(), text)
			if got != n || check != n {
				t.Errorf("bos=%d n=%d: returned %d, text counts %d", bos, n, got, check)
			}
			if limit := 2*int(math.Ceil(math.Log2(float64(n+1)))) + 4; calls > limit {
				t.Errorf("bos=%d n=%d: %d counter calls, want at most %d", bos, n, calls, limit)
			}
			if strings.Contains(text, " a a") {
				t.Errorf("bos=%d n=%d: padded although whole words fit: %q", bos, n, text[max(0, len(text)-40):])
			}
		}
	}
}

func TestSynthesizePadding(t *testing.T) {
	// Every word is two tokens except the padding word " a", which a word counter also counts
	// as two: odd counts are impossible and must be reported, even counts found.
	w := &words{perWord: 2}
	if _, _, err := Synthesize(context.Background(), w, 101, 0); err == nil {
		t.Error("an impossible count was reported as found")
	}
	if text, n, err := Synthesize(context.Background(), w, 100, 0); err != nil || n != 100 || len(strings.Fields(text)) != 50 {
		t.Errorf("n=100: %d words, %v", len(strings.Fields(text)), err)
	}
	// With a BOS token, n=1 would need an empty prompt.
	if _, _, err := Synthesize(context.Background(), &words{bos: 1}, 1, 0); err == nil {
		t.Error("n=1 with a BOS token was reported as found")
	}
	if _, _, err := Synthesize(context.Background(), &words{}, 0, 0); err == nil {
		t.Error("n=0 accepted")
	}
}

func TestSynthesizeTiktokenPads(t *testing.T) {
	// Find an n that no whole-word prefix hits, so the padding path runs under tiktoken.
	tk := tiktokenCounter(t)
	ctx := context.Background()
	s := &synth{ctx: ctx, c: tk, memo: map[int]int{}}
	prev := 0
	gap := -1
	for k := 1; k < 200 && gap < 0; k++ {
		n, _ := s.count(k)
		if n > prev+1 {
			gap = prev + 1
		}
		prev = n
	}
	if gap < 0 {
		t.Fatal("no word of the filler is more than one token")
	}
	text, n, err := Synthesize(ctx, tk, gap, 0)
	if err != nil || n != gap {
		t.Fatalf("n=%d: %v", gap, err)
	}
	if check, _ := tk.Count(ctx, text); check != gap || !strings.HasSuffix(text, " a") {
		t.Errorf("n=%d: text counts %d and ends %q", gap, check, text[max(0, len(text)-20):])
	}
}

func TestSynthesizeDeterministic(t *testing.T) {
	tk := tiktokenCounter(t)
	ctx := context.Background()
	a, _, _ := Synthesize(ctx, tk, 64, 1)
	b, _, _ := Synthesize(ctx, tk, 64, 1)
	c, _, _ := Synthesize(ctx, tk, 64, 2)
	if a != b {
		t.Error("equal seeds gave different prompts")
	}
	if a == c || a[:20] == c[:20] {
		t.Error("different seeds gave the same prompt start")
	}
}

func TestSynthesizeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Synthesize(ctx, &words{}, 100, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func BenchmarkTiktokenCount(b *testing.B) {
	tk := tiktokenCounter(b)
	ctx := context.Background()
	text, _, err := Synthesize(ctx, tk, 1000, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, _ := tk.Count(ctx, text); n != 1000 {
			b.Fatalf("count %d", n)
		}
	}
}
