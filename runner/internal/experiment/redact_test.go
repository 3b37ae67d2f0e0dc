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
