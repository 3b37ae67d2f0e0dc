package redact

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsSecretName(t *testing.T) {
	tests := []struct {
		name   string
		secret bool
	}{
		{"API_KEY", true},
		{"OPENAI_API_KEY", true},
		{"MY_API_KEY", true},
		{"HF_TOKEN", true},
		{"HUGGING_FACE_HUB_TOKEN", true},
		{"GITHUB_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"CLIENT_SECRET", true},
		{"PASSWORD", true},
		{"DB_PASSWORD", true},
		{"PGPASS", false}, // one word, not the word "pass"
		{"DB_PASS", true},
		{"APIKEY", true},
		{"x-api-key", true},
		{"Authorization", true},
		{"--api-key", true},
		{"--hf-token", true},
		{"--token", true},
		{"access_token", true},
		{"sig", true},

		{"TOKENIZERS_PARALLELISM", false},
		{"MAX_TOKENS", false},
		{"max_tokens", false},
		{"--max-num-batched-tokens", false},
		{"--tokenizer", false},
		{"--tokenizer-mode", false},
		{"--ssl-keyfile", false},
		{"--decode-per-token", false},
		{"--prefill-per-token", false},
		{"KEEP_ALIVE", false},
		{"OLLAMA_KEEP_ALIVE", false},
		{"HF_HOME", false},
		{"PATH", false},
		{"VLLM_SERVER_DEV_MODE", false},
		{"MONKEY", false},
		// A secret word that is not the last qualifies something else.
		{"--api-key-file", false},
		{"--ssl-key-file", false},
		{"return_tokens_as_token_ids", false},
		{"allowed_token_ids", false},
		{"--return-tokens-as-token-ids", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsSecretName(tt.name); got != tt.secret {
			t.Errorf("IsSecretName(%q) = %v, want %v", tt.name, got, tt.secret)
		}
	}
}

func TestArgs(t *testing.T) {
	const R = Marker
	tests := []struct{ in, want []string }{
		{[]string{"vllm", "serve", "m", "--api-key", "sk-1", "--port", "8000"}, []string{"vllm", "serve", "m", "--api-key", R, "--port", "8000"}},
		{[]string{"--api-key=sk-1"}, []string{"--api-key=" + R}},
		{[]string{"--hf-token=hf_x", "--max-num-batched-tokens", "2048"}, []string{"--hf-token=" + R, "--max-num-batched-tokens", "2048"}},
		{[]string{"--token", "t0k3n", "--seed", "1"}, []string{"--token", R, "--seed", "1"}},
		{[]string{"env", "HF_TOKEN=hf_x", "OLLAMA_KEEP_ALIVE=-1", "VLLM_SERVER_DEV_MODE=1", "TOKENIZERS_PARALLELISM=false"},
			[]string{"env", "HF_TOKEN=" + R, "OLLAMA_KEEP_ALIVE=-1", "VLLM_SERVER_DEV_MODE=1", "TOKENIZERS_PARALLELISM=false"}},
		{[]string{"--url", "http://bob:pw@127.0.0.1:8000/v1"}, []string{"--url", "http://bob:" + R + "@127.0.0.1:8000/v1"}},
		{[]string{"--url", "https://ghp_abcdefgh@example.com/x.git"}, []string{"--url", "https://" + R + "@example.com/x.git"}},
		{[]string{"--download", "http://h/m.gguf?token=abc123&rev=main"}, []string{"--download", "http://h/m.gguf?token=" + R + "&rev=main"}},
		{[]string{"--download=http://h/m?api_key=k3y&key=k4y"}, []string{"--download=http://h/m?api_key=" + R + "&key=" + R}},
		{[]string{"--ready", "/health?token=rp-1&x=1#frag"}, []string{"--ready", "/health?token=" + R + "&x=1#frag"}},
		{[]string{"-H", "Authorization: Bearer sk-2"}, []string{"-H", "Authorization: Bearer " + R}},
		{[]string{"-H", "X-Api-Key: abcd-1"}, []string{"-H", "X-Api-Key: " + R}},
		{[]string{"--header", "Bearer", "sk-3"}, []string{"--header", "Bearer", R}},
		{[]string{"--api-key", "--port", "1"}, []string{"--api-key", "--port", "1"}}, // a flag, not a value
		{[]string{"--tokenizer", "gpt2", "--tokenizer-mode", "auto", "--ssl-keyfile", "k.pem"}, []string{"--tokenizer", "gpt2", "--tokenizer-mode", "auto", "--ssl-keyfile", "k.pem"}},
		// A rate per token is no secret; a token of a named service is.
		{[]string{"--decode-per-token", "5ms", "--prefill-per-token=200us", "--hf-token", "hf_y"}, []string{"--decode-per-token", "5ms", "--prefill-per-token=200us", "--hf-token", R}},
		// A secret is hidden wherever else it appears, too.
		{[]string{"--api-key", "sk-long", "--served-model-name", "model-sk-long"}, []string{"--api-key", R, "--served-model-name", "model-" + R}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := Args(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Args(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnv(t *testing.T) {
	got := Env(map[string]string{
		"OPENAI_API_KEY": "sk", "HF_HOME": "/cache", "PROXY": "http://u:p@h",
		"TOKENIZERS_PARALLELISM": "false", "MAX_TOKENS": "128", "EXTRA_ARGS": "--api-key sk-9 --port 1",
	})
	want := map[string]string{
		"OPENAI_API_KEY": Marker, "HF_HOME": "/cache", "PROXY": "http://u:" + Marker + "@h",
		"TOKENIZERS_PARALLELISM": "false", "MAX_TOKENS": "128", "EXTRA_ARGS": "--api-key " + Marker + " --port 1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
	if Env(nil) != nil {
		t.Error("Env(nil) is not nil")
	}
	secrets := EnvSecrets(map[string]string{"TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": "hf_abc", "PROXY": "http://u:pw1@h"})
	slices.Sort(secrets)
	if want := []string{"hf_abc", "pw1"}; !slices.Equal(secrets, want) {
		t.Errorf("EnvSecrets = %q, want %q", secrets, want)
	}
}

func TestReplacer(t *testing.T) {
	r := New("hidden", "hidden-long", "abc", "")
	tests := []struct{ in, want string }{
		{"x hidden-long y", "x " + Marker + " y"},
		{"hidden and hidden", Marker + " and " + Marker},
		{"abc is too short to hide", "abc is too short to hide"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Replacer
	if none.String("hidden") != "hidden" || !none.Empty() {
		t.Error("a nil Replacer hides something")
	}
}

func TestLooksLikeKey(t *testing.T) {
	tests := []struct {
		s   string
		key bool
	}{
		{"sk-proj-abcdefghijklmnop", true},
		{"hf_AbCdEfGhIjKlMnOpQrStUv", true},
		{"ghp_0123456789abcdef", true},
		{"Xk8Jd93LmQp2Rt7Vw1Zy4Bn6", true},
		{"OPENAI_API_KEY", false},
		{"HF_TOKEN", false},
		{"my_api_key", false},
		{"sk_KEY", false},
		{"MY_SERVICE_API_KEY_2024_PROD", false},
	}
	for _, tt := range tests {
		if got := LooksLikeKey(tt.s); got != tt.key {
			t.Errorf("LooksLikeKey(%q) = %v, want %v", tt.s, got, tt.key)
		}
	}
}

func TestTree(t *testing.T) {
	in := map[string]any{
		"api_key":         "sk-tree",
		"temperature":     0.5,
		"metadata":        map[string]any{"user": "bob", "auth": map[string]any{"token": 12345678, "value": "abc"}, "urls": []any{"http://u:pw@h/x?sig=abc"}},
		"max_tokens_hint": 10,
	}
	want := map[string]any{
		"api_key":         Marker,
		"temperature":     0.5,
		"metadata":        map[string]any{"user": "bob", "auth": map[string]any{"token": Marker, "value": Marker}, "urls": []any{"http://u:" + Marker + "@h/x?sig=" + Marker}},
		"max_tokens_hint": 10,
	}
	if got := Tree("", in); !reflect.DeepEqual(got, want) {
		t.Errorf("Tree = %v, want %v", got, want)
	}
}

// FuzzArgs checks Args on any command line (its words joined by NUL): it keeps the number of
// words, keeps valid UTF-8 valid, hides every secret of a word at its own place, and hides every
// secret long enough for a Replacer wherever it appears.
func FuzzArgs(f *testing.F) {
	f.Add("--api-key\x00sk-1\x00--port\x008000")
	f.Add("-H\x00Authorization: Bearer sk-2\x00http://u:p@h/?token=t&x=1")
	f.Add("HF_TOKEN=x\x00--url=http://@h?\x00Bearer")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		out := Args(argv)
		if len(out) != len(argv) {
			t.Fatalf("Args returned %d words for %d", len(out), len(argv))
		}
		// A secret made of the marker's letters may reappear across it; others may not.
		markerFree := func(sec string) bool { return !strings.ContainsAny(sec, Marker) }
		for i, a := range argv {
			if utf8.ValidString(a) && !utf8.ValidString(out[i]) {
				t.Errorf("Args(%q) word %d = %q is not valid UTF-8", argv, i, out[i])
			}
			// Each secret found in a word (a whole command line in one word included) is replaced
			// at its own place, however short, so the word keeps fewer copies of it.
			for _, sec := range ArgSecrets([]string{a}) {
				if markerFree(sec) && strings.Count(out[i], sec) >= strings.Count(a, sec) {
					t.Errorf("Args(%q) word %d = %q keeps the secret %q where it stood", argv, i, out[i], sec)
				}
			}
		}
		joined := strings.Join(out, "\x00")
		for _, sec := range ArgSecrets(argv) {
			// A Replacer keeps no secret shorter than four bytes and no boolean or number.
			if !New(sec).Empty() && markerFree(sec) && strings.Contains(joined, sec) {
				t.Errorf("Args(%q) = %q keeps the secret %q", argv, out, sec)
			}
		}
	})
}

// TestNearMisses covers values that look like secrets to a careless rule: a flag whose next
// argument is another flag, a whole command line in one argument, booleans and numbers.
func TestNearMisses(t *testing.T) {
	R := Marker
	tests := []struct {
		in, want []string
	}{
		{[]string{"vllm", "serve", "m", "--return-tokens-as-token-ids", "-tp", "2"}, []string{"vllm", "serve", "m", "--return-tokens-as-token-ids", "-tp", "2"}},
		{[]string{"--api-key", "-x"}, []string{"--api-key", "-x"}},
		{[]string{"--ssl-key-file", "/etc/ssl/k.pem"}, []string{"--ssl-key-file", "/etc/ssl/k.pem"}},
		{[]string{"bash", "-c", "vllm serve m --api-key sk-abcdef123 --port {port}"}, []string{"bash", "-c", "vllm serve m --api-key " + R + " --port {port}"}},
		{[]string{"sh", "-c", "exec srv --api-key=sk-abcdef123"}, []string{"sh", "-c", "exec srv --api-key=" + R}},
		// A short key or a number is too common to hide elsewhere, but is hidden at its place.
		{[]string{"sh", "-c", "srv --api-key abc --port 1"}, []string{"sh", "-c", "srv --api-key " + R + " --port 1"}},
		{[]string{"sh", "-c", "srv  --token\t8000 -H 'Authorization: Bearer 1234'"}, []string{"sh", "-c", "srv  --token\t" + R + " -H 'Authorization: Bearer " + R}},
	}
	for _, tt := range tests {
		if got := Args(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Args(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A boolean or a number is never hidden elsewhere in text, even when it was a flag's value.
	r := New(ArgSecrets([]string{"--token", "true", "--api-key", "8000", "--hf-token", "hf_abcdefgh"})...)
	if got := r.String("ignore_eos=true port 8000 key hf_abcdefgh"); got != "ignore_eos=true port 8000 key "+R {
		t.Errorf("Replacer.String = %q", got)
	}
	tree := map[string]any{"return_tokens_as_token_ids": true, "allowed_token_ids": []any{1, 2, 3},
		"ignore_eos": true, "api_key": "sk-abcdefghij"}
	want := map[string]any{"return_tokens_as_token_ids": true, "allowed_token_ids": []any{1, 2, 3},
		"ignore_eos": true, "api_key": R}
	if got := Tree("", tree); !reflect.DeepEqual(got, want) {
		t.Errorf("Tree = %v, want %v", got, want)
	}
	if got := TreeSecrets("", tree); !reflect.DeepEqual(got, []string{"sk-abcdefghij"}) {
		t.Errorf("TreeSecrets = %q", got)
	}
	var b strings.Builder
	w := New("sk-abcdefghij").Writer(&b)
	if n, err := w.Write([]byte("got 401 for sk-abcdefghij\n")); err != nil || n != 26 {
		t.Errorf("Writer.Write = %d, %v", n, err)
	}
	if b.String() != "got 401 for "+R+"\n" {
		t.Errorf("Writer wrote %q", b.String())
	}
}

// TestArgsUnicode covers text whose bytes change length when case-folded: invalid UTF-8 (each
// bad byte folds to a three-byte U+FFFD), letters whose lower case is longer (Ⱥ, two bytes, to
// ⱥ, three) or shorter (the Kelvin sign, three bytes, to k, one). An offset found in folded text
// and applied to the original would cut the wrong bytes, leak part of the secret and break the
// UTF-8 around it.
func TestArgsUnicode(t *testing.T) {
	const R = Marker
	tests := []struct{ in, want string }{
		{"A0aaaaAAaaaa\xda\xda\xda: BeArer 0000", "A0aaaaAAaaaa\xda\xda\xda: BeArer " + R},
		{"ȺȺȺ: Bearer SECRETXYZ123", "ȺȺȺ: Bearer " + R},
		{"\u212a\u212a\u212a: Bearer SECRETXYZ123", "\u212a\u212a\u212a: Bearer " + R},
		{"\u212a\u212a\u212a bearer sk-abcdefgh tail", "\u212a\u212a\u212a bearer " + R + " tail"},
		{"Ⱥ: Bearer éévalue", "Ⱥ: Bearer " + R},
		{"ⱥⱥⱥ BEARER tok9 ȺȺ", "ⱥⱥⱥ BEARER " + R + " ȺȺ"},
	}
	for _, tt := range tests {
		got := Args([]string{tt.in})
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("Args(%q) = %q, want %q", tt.in, got, []string{tt.want})
		}
		if utf8.ValidString(tt.in) && !utf8.ValidString(got[0]) {
			t.Errorf("Args(%q) = %q is not valid UTF-8", tt.in, got[0])
		}
	}
}
