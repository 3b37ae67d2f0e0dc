package sim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"", "crash", "hang@3", "status=503", "refuse=return_token_ids,error@2", "x@", "@@", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			return
		}
		again, err := ParseFaults(FormatFaults(fs))
		if err != nil || !slices.Equal(again, fs) {
			t.Errorf("round trip of %q: %v -> %q -> %v, %v", spec, fs, FormatFaults(fs), again, err)
		}
	})
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"1", "1,3,1", "0", "", "9999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		for _, n := range p {
			if n < 1 {
				t.Fatalf("ParsePattern(%q) accepted %d", s, n)
			}
		}
		if again, err := ParsePattern(FormatPattern(p)); err != nil || !slices.Equal(again, p) {
			t.Errorf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

// FuzzTokenizer checks that decoding the encoding of any valid text gives the text back.
func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{"", "the cat", " hello, world.", "<s>x</s>", "<|user|>\nhi<|end|>", "é😀", "<", "  the"} {
		f.Add(s)
	}
	tok := newTokenizer()
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		ids := tok.encode(s, false)
		got, err := tok.decode(ids, false)
		if err != nil || got != s {
			t.Errorf("decode(encode(%q)) = %q, %v", s, got, err)
		}
		if n := tok.count(s, true); n != len(ids)+1 {
			t.Errorf("count with BOS %d, want %d", n, len(ids)+1)
		}
	})
}

// FuzzGenerateBody sends arbitrary request bodies: every answer is a 200 or a 4xx error with a
// JSON body, and nothing panics.
func FuzzGenerateBody(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"the","max_tokens":3}`,
		`{"prompt":[1,2,3],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_tokens":2}`,
		`{"prompt":null}`, `[]`, `{"prompt":"a","n":0}`, `{"prompt":"a","max_tokens":-1}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	c := testConfig()
	c.MaxModelLen = 64
	s, err := New(c)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		switch {
		case w.Code == 200:
			return
		case w.Code >= 400 && w.Code < 500:
			var e nestedError
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Code != w.Code {
				t.Errorf("HTTP %d with a body that is not a vLLM error: %s", w.Code, w.Body.Bytes())
			}
		default:
			t.Errorf("HTTP %d for %q: %s", w.Code, body, w.Body.Bytes())
		}
	})
}
