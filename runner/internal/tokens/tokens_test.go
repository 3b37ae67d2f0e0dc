package tokens

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
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

// TestTiktokenCountPieces checks that counting in pieces changes nothing for ordinary text and
// little for long runs without whitespace, against the encoder run on the whole text.
func TestTiktokenCountPieces(t *testing.T) {
	raw := make([]byte, 7500)
	for i := range raw {
		raw[i] = byte(i * 7919 >> 3)
	}
	tests := []struct {
		name  string
		text  string
		exact bool // whether the count must equal the whole text's
	}{
		{"prose", prose(50_000), true},
		{"short lines", strings.Repeat("a\nb.\n12\n", 3000), true},
		{"code", strings.Repeat("func f(x int) int {\n\treturn x*2 // twice\n}\n\n", 400), true},
		{"cjk", strings.Repeat("今天天气很好，我们一起去公园散步。", 300), true},
		{"words and marks", strings.Repeat("it's-don't/won't,Vous-êtes", 300), true},
		{"cjk without marks", strings.Repeat("今天天气很好我们一起去公园散步", 300), false},
		{"spaces", strings.Repeat(" ", 3000) + "a", false},
		{"unbroken letters", unbroken(10_000), false},
		{"base64", base64.StdEncoding.EncodeToString(raw), false},
		{"one letter", strings.Repeat("x", 10_000), false},
	}
	for _, tt := range tests {
		for _, encoding := range []string{"cl100k_base", "o200k_base", "r50k_base"} {
			t.Run(tt.name+"/"+encoding, func(t *testing.T) {
				tk, err := NewTiktoken(encoding)
				if err != nil {
					t.Fatal(err)
				}
				countPieces(t, tk, tt.text, tt.exact)
			})
		}
	}
}

// countPieces checks tk.Count(text) against the encoder run on the whole text: equal when
// exact, else at most one token more per maxRun bytes (a cut inside a run adds about one).
func countPieces(t *testing.T, tk *Tiktoken, text string, exact bool) {
	t.Helper()
	whole := len(tk.enc.EncodeOrdinary(text))
	got, err := tk.Count(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	slack := 0
	if !exact {
		slack = len(text) / maxRun
	}
	if got < whole || got > whole+slack {
		t.Errorf("Count = %d, the whole text encodes to %d tokens (allowed up to %d more)", got, whole, slack)
	}
}

// TestSplitText checks the pieces Count encodes: together they are the text, each ends on a
// rune boundary, none is longer than about 2·chunkSize bytes, and none holds a run without
// whitespace (or of whitespace) longer than about maxRun bytes, which keeps the encoder's cost
// linear in the length of the text.
func TestSplitText(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"empty", ""},
		{"prose", prose(30_000)},
		{"unbroken", unbroken(5000)},
		{"cjk run", strings.Repeat("天气", 2000)},
		{"spaces", strings.Repeat(" ", 2000) + "x"},
		{"newlines only", strings.Repeat("ab\n", 10_000)},
		{"invalid utf-8", strings.Repeat("\xff\xfe", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var joined strings.Builder
			for rest := tt.text; rest != ""; {
				n := splitText(rest)
				if n <= 0 || n > len(rest) {
					t.Fatalf("splitText returned %d for %d bytes", n, len(rest))
				}
				piece := rest[:n]
				rest = rest[n:]
				joined.WriteString(piece)
				if n > 2*chunkSize+utf8.UTFMax {
					t.Errorf("a piece of %d bytes", n)
				}
				if utf8.ValidString(tt.text) && !utf8.ValidString(piece) {
					t.Errorf("a piece cuts a rune: %q", piece[max(0, n-8):])
				}
				if l := longestRun(piece); l > maxRun+utf8.UTFMax {
					t.Errorf("a piece holds a run of %d bytes", l)
				}
			}
			if joined.String() != tt.text {
				t.Error("the pieces do not make up the text")
			}
		})
	}
}

// longestRun returns the bytes of the longest run of non-space, or of space, runes in s.
func longestRun(s string) int {
	longest, run, prev := 0, 0, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		space := unicode.IsSpace(r)
		if i > 0 && space != prev {
			run = 0
		}
		run += size
		longest, prev = max(longest, run), space
		i += size
	}
	return longest
}

// stopAfter is a context that reports itself cancelled from its (ok+1)th Err call on, and
// counts the calls.
type stopAfter struct {
	context.Context
	ok, calls int
}

func (c *stopAfter) Err() error {
	c.calls++
	if c.calls > c.ok {
		return context.Canceled
	}
	return nil
}

// TestTiktokenCountCanceled checks that Count on a long text stops with the context's error at
// its first look after the context ended, instead of counting on: before any work when the
// context has already ended, and after exactly the pieces counted while it had not.
func TestTiktokenCountCanceled(t *testing.T) {
	tk := tiktokenCounter(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, text := range []string{prose(1 << 20), unbroken(1 << 17)} {
		for _, tt := range []struct {
			ctx  context.Context
			want error
		}{
			{canceled, context.Canceled},
			{expired, context.DeadlineExceeded},
		} {
			if n, err := tk.Count(tt.ctx, text); !errors.Is(err, tt.want) || n != 0 {
				t.Errorf("%d bytes, context ended: Count = %d, %v; want %v", len(text), n, err, tt.want)
			}
		}
		for _, ok := range []int{1, 3} {
			ctx := &stopAfter{Context: context.Background(), ok: ok}
			n, err := tk.Count(ctx, text)
			if !errors.Is(err, context.Canceled) || n != 0 {
				t.Errorf("%d bytes, cancelled after %d pieces: Count = %d, %v; want context.Canceled", len(text), ok, n, err)
			}
			if ctx.calls != ok+1 {
				t.Errorf("%d bytes, cancelled after %d pieces: the context was looked at %d times, want %d", len(text), ok, ctx.calls, ok+1)
			}
		}
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

// benchChars is the length of the benchmark texts: the cost per 100,000 characters is the
// benchmark's time per operation.
const benchChars = 100_000

// prose returns n bytes of the filler paragraph, repeated: ordinary text with whitespace.
func prose(n int) string {
	return strings.Repeat(filler+" ", n/len(filler)+1)[:n]
}

// unbroken returns n ASCII letters without whitespace or punctuation, in a fixed pseudo-random
// order: to tiktoken's pre-tokenizer it is one word of n bytes.
func unbroken(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return string(b)
}

// BenchmarkTiktokenCount100k measures the cost of counting 100,000 characters, reported as
// ns/100k-chars: of prose, and of one unbroken run of letters (one pre-tokenizer word, the
// worst case of byte-pair encoding).
func BenchmarkTiktokenCount100k(b *testing.B) {
	tk := tiktokenCounter(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		text string
	}{
		{"prose", prose(benchChars)},
		{"unbroken", unbroken(benchChars)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				if n, err := tk.Count(ctx, bc.text); err != nil || n == 0 {
					b.Fatalf("Count = %d, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*benchChars/float64(len(bc.text)), "ns/100k-chars")
		})
	}
}
