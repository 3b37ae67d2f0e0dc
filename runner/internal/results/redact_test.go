package results

import (
	"reflect"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"vllm", "serve", "m", "--api-key", "sk-1", "--port", "8000"}, []string{"vllm", "serve", "m", "--api-key", Redacted, "--port", "8000"}},
		{[]string{"--hf-token=hf_x", "--max-num-batched-tokens", "2048"}, []string{"--hf-token=" + Redacted, "--max-num-batched-tokens", "2048"}},
		{[]string{"env", "HF_TOKEN=hf_x", "OLLAMA_KEEP_ALIVE=-1", "VLLM_SERVER_DEV_MODE=1"}, []string{"env", "HF_TOKEN=" + Redacted, "OLLAMA_KEEP_ALIVE=-1", "VLLM_SERVER_DEV_MODE=1"}},
		{[]string{"--url", "http://bob:pw@127.0.0.1:8000/v1"}, []string{"--url", "http://bob:" + Redacted + "@127.0.0.1:8000/v1"}},
		{[]string{"-H", "Authorization: Bearer sk-2"}, []string{"-H", "Authorization: Bearer " + Redacted}},
		{[]string{"--api-key", "--port", "1"}, []string{"--api-key", "--port", "1"}}, // a flag, not a value
		{[]string{"--tokenizer", "gpt2", "--tokenizer-mode", "auto", "--ssl-keyfile", "k.pem"}, []string{"--tokenizer", "gpt2", "--tokenizer-mode", "auto", "--ssl-keyfile", "k.pem"}},
		// A rate per token is no secret; a token of a named service is.
		{[]string{"--decode-per-token", "5ms", "--prefill-per-token=200us", "--hf-token", "hf_y"}, []string{"--decode-per-token", "5ms", "--prefill-per-token=200us", "--hf-token", Redacted}},
		{nil, []string{}},
	}
	for _, tt := range tests {
		if got := RedactArgs(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RedactArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactEnv(t *testing.T) {
	got := RedactEnv(map[string]string{"OPENAI_API_KEY": "sk", "HF_HOME": "/cache", "PROXY": "http://u:p@h"})
	want := map[string]string{"OPENAI_API_KEY": Redacted, "HF_HOME": "/cache", "PROXY": "http://u:" + Redacted + "@h"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RedactEnv = %v, want %v", got, want)
	}
	if RedactEnv(nil) != nil {
		t.Error("RedactEnv(nil) is not nil")
	}
}
