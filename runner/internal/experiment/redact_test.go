package experiment

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactedSource(t *testing.T) {
	const head = "version: 1\nname: r\nserver:\n  engine: sim\n"
	const tail = "request:\n  prompt_tokens: 8\n  max_tokens: 4\n"
	tests := []struct {
		name   string
		server string // the rest of the server section
		want   string // the whole redacted file; "" when it is re-encoded
		fields []string
		secret string
	}{
		{"no secrets", "  args: [--seed, \"7\"]\n  env: {TOKENIZERS_PARALLELISM: \"false\"}\n",
			head + "  args: [--seed, \"7\"]\n  env: {TOKENIZERS_PARALLELISM: \"false\"}\n" + tail, nil, ""},
		{"plain", "  args: [--api-key, sk-plain-1234]\n",
			head + "  args: [--api-key, REDACTED]\n" + tail, []string{"server.args[1]"}, "sk-plain-1234"},
		{"flow and quotes", "  args: [\"--api-key=sk-dq-1234\", '--token', 'tk-sq-1234']\n",
			head + "  args: [\"--api-key=REDACTED\", '--token', 'REDACTED']\n" + tail, []string{"server.args[0]", "server.args[2]"}, "sk-dq-1234"},
		{"block list", "  env:\n    HF_TOKEN: hf_block_1234\n    HF_HOME: /cache\n",
			head + "  env:\n    HF_TOKEN: REDACTED\n    HF_HOME: /cache\n" + tail, []string{"server.env.HF_TOKEN"}, "hf_block_1234"},
		{"unicode before", "  env: {NOTE: \"é\", MY_API_KEY: k-unicode-1234}\n",
			head + "  env: {NOTE: \"é\", MY_API_KEY: REDACTED}\n" + tail, []string{"server.env.MY_API_KEY"}, "k-unicode-1234"},
		// An escape in the secret, or a block scalar: the file cannot be edited in place.
		{"escaped", "  env: {HF_TOKEN: \"hf_\\x41scaped_1234\"}\n", "", []string{"server.env.HF_TOKEN"}, "hf_Ascaped_1234"},
		{"block scalar", "  env:\n    HF_TOKEN: |-\n      hf_literal_1234\n", "", []string{"server.env.HF_TOKEN"}, "hf_literal_1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.server + tail
			e, err := Parse("r.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			got, fields := e.RedactedSource()
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields %q, want %q", fields, tt.fields)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Errorf("redacted source:\n%s\nwant:\n%s", got, tt.want)
			}
			if tt.secret != "" && strings.Contains(string(got), tt.secret) {
				t.Errorf("the secret is still there:\n%s", got)
			}
			// Whatever the way, the copy loads, and holds no secret when loaded.
			r, err := Parse("copy.yaml", got)
			if err != nil {
				t.Fatalf("the redacted source does not load: %v\n%s", err, got)
			}
			if again, f := r.RedactedSource(); f != nil || string(again) != string(got) {
				t.Errorf("the redacted source still holds secrets in %q", f)
			}
			if tt.secret != "" && strings.Contains(strings.Join(r.Server.Args, " ")+r.Server.Env["HF_TOKEN"]+r.Server.Env["MY_API_KEY"], tt.secret) {
				t.Errorf("the loaded copy holds the secret")
			}
		})
	}
}

// TestErrorsDoNotEchoSecrets puts secrets where they do not belong: the error must say what is
// wrong without repeating them.
func TestErrorsDoNotEchoSecrets(t *testing.T) {
	const head = "version: 1\nname: r\n"
	const endpoint = "server:\n  engine: endpoint\n  model: m\n  url: http://127.0.0.1:8000\n"
	const request = "request:\n  prompt_tokens: 8\n  max_tokens: 4\n"
	tests := []struct {
		name, yaml, secret, want string
	}{
		{"api_key_env holds an OpenAI key", head + endpoint + "  api_key_env: sk-proj-abcdefghijklmnop1234\n" + request,
			"abcdefghijklmnop1234", "server.api_key_env: looks like a key"},
		{"api_key_env holds a key that passes for a name", head + endpoint + "  api_key_env: hf_AbCdEfGhIjKlMnOpQrSt\n" + request,
			"AbCdEfGhIjKlMnOpQrSt", "server.api_key_env: looks like a key"},
		{"api_key_env holds no name", head + endpoint + "  api_key_env: \"abc.def-ghi-jkl\"\n" + request,
			"abc.def-ghi-jkl", "server.api_key_env: must be the name of an environment variable"},
		{"api_key_env axis holds a key", head + endpoint + request + "matrix:\n  server.api_key_env: [OPENAI_API_KEY, sk-proj-zyxwvutsrqponmlk9876]\n",
			"zyxwvutsrqponmlk9876", "looks like a key"},
		{"url with credentials and a wrong scheme", head + "server:\n  engine: endpoint\n  model: m\n  url: ftp://me:url-secret-77@host\n" + request,
			"url-secret-77", "server.url: must not carry credentials"},
		{"env written as one string", head + "server:\n  model: m\n  env: \"HF_TOKEN=hf_str_secret_1234\"\n" + request,
			"hf_str_secret_1234", "server.env: must be a mapping"},
		{"ready_path with a token", head + "server:\n  engine: command\n  model: m\n  command: [srv, \"{port}\"]\n  ready_path: \"health?token=rp-secret-1234\"\n" + request,
			"rp-secret-1234", "server.ready_path: must be a URL path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("the error repeats the secret:\n%v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant one that says %q", err, tt.want)
			}
		})
	}
}
