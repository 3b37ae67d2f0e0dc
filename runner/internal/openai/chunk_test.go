package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestDecodeChunk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Chunk
	}{
		{"done", `[DONE]`, Chunk{Done: true}},
		{"done with spaces", " [DONE] \n", Chunk{Done: true}},
		{"empty", "", Chunk{}},
		{"blank", " \n ", Chunk{}},
		{"completions text", `{"object":"text_completion","choices":[{"index":0,"text":" hi","finish_reason":null}]}`,
			Chunk{Text: " hi", HasChoices: true}},
		{"chat content", `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
			Chunk{Text: "hi", HasChoices: true}},
		{"completions-shaped on chat", `{"object":"chat.completion.chunk","choices":[{"index":0,"text":"x"}]}`,
			Chunk{Text: "x", HasChoices: true}},
		{"chat-shaped with empty text", `{"object":"text_completion","choices":[{"index":0,"text":"","delta":{"content":"y"}}]}`,
			Chunk{Text: "y", HasChoices: true}},
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`,
			Chunk{HasChoices: true}},
		{"null content", `{"choices":[{"index":0,"delta":{"role":null,"content":null},"finish_reason":"length"}]}`,
			Chunk{HasChoices: true, FinishReason: "length"}},
		{"reasoning_content", `{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`,
			Chunk{Reasoning: "think", HasChoices: true}},
		{"ollama reasoning", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"hmm"}}]}`,
			Chunk{Reasoning: "hmm", HasChoices: true}},
		{"null tool calls", `{"choices":[{"index":0,"delta":{"content":"a","tool_calls":null}}]}`,
			Chunk{Text: "a", HasChoices: true}},
		{"tool calls", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`,
			Chunk{ToolCalls: true, HasChoices: true}},
		{"token ids", `{"choices":[{"index":0,"delta":{"content":"ab"},"token_ids":[5,6]}]}`,
			Chunk{Text: "ab", HasChoices: true, TokenIDs: []int{5, 6}}},
		{"null token ids", `{"choices":[{"index":0,"delta":{"content":"ab"},"token_ids":null}]}`,
			Chunk{Text: "ab", HasChoices: true}},
		{"usage null", `{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}`,
			Chunk{Text: "a", HasChoices: true}},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":3,"total_tokens":8,"completion_tokens":5}}`,
			Chunk{Usage: &Usage{3, 5, 8, 0}}},
		{"usage without choices key", `{"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
			Chunk{Usage: &Usage{3, 5, 8, 0}}},
		{"openai reasoning tokens", `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":9,"total_tokens":10,"completion_tokens_details":{"reasoning_tokens":7}}}`,
			Chunk{Usage: &Usage{1, 9, 10, 7}}},
		{"sglang reasoning tokens", `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":9,"total_tokens":10,"prompt_tokens_details":null,"reasoning_tokens":4}}`,
			Chunk{Usage: &Usage{1, 9, 10, 4}}},
		{"error object", `{"error": {"object": "error", "message": "too long", "type": "BadRequestError", "param": null, "code": 400}}`,
			Chunk{Err: &StreamError{"too long", "BadRequestError", "400"}}},
		{"error with string code", `{"error":{"message":"nope","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			Chunk{Err: &StreamError{"nope", "invalid_request_error", "context_length_exceeded"}}},
		{"tgi error string", `{"error":"Input validation error","error_type":"validation"}`,
			Chunk{Err: &StreamError{"Input validation error", "validation", ""}}},
		{"vllm object error", `{"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}`,
			Chunk{Err: &StreamError{"engine dead", "InternalServerError", "500"}}},
		{"null error", `{"choices":[{"index":0,"delta":{"content":"a"}}],"error":null}`,
			Chunk{Text: "a", HasChoices: true}},
		{"error then done in one event", "{\"error\": {\"message\": \"m\", \"code\": 400}}\n[DONE]",
			Chunk{Done: true, Err: &StreamError{"m", "", "400"}}},
		{"tgi native token", `{"index":2,"token":{"id":42,"text":" sea","logprob":-0.1,"special":false},"generated_text":null,"details":null}`,
			Chunk{Text: " sea", TokenIDs: []int{42}}},
		{"tgi native special token", `{"token":{"id":2,"text":"</s>","special":true},"generated_text":"x","details":{"finish_reason":"eos_token"}}`,
			Chunk{TokenIDs: []int{2}, FinishReason: "eos_token"}},
		{"only choices[0] counts", `{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}`,
			Chunk{Text: "b", HasChoices: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeChunk([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeChunk: %v", err)
			}
			if g, w := show(got), show(tt.want); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
			if got.IsText() != (tt.want.Text != "") {
				t.Errorf("IsText() = %v", got.IsText())
			}
		})
	}
}

func show(c Chunk) string {
	s := fmt.Sprintf("done=%v text=%q reasoning=%q tools=%v choices=%v finish=%q ids=%#v",
		c.Done, c.Text, c.Reasoning, c.ToolCalls, c.HasChoices, c.FinishReason, c.TokenIDs)
	if c.Usage != nil {
		s += fmt.Sprintf(" usage=%+v", *c.Usage)
	}
	if c.Err != nil {
		s += fmt.Sprintf(" err=%+v", *c.Err)
	}
	return s
}

func TestDecodeChunkErrors(t *testing.T) {
	for _, in := range []string{
		`{"choices":[`,
		`{"id":"a"}\n\ndata: {"id":"b"}`,
		`{"choices":[{"delta":{"content":[{"type":"text","text":"a"}]}}]}`, // content parts are not a stream shape
		`{"choices":[{"delta":{"content":"a"}}]} trailing`,
		`[DONE] [DONE]`,
		`{"error":{"message":5}}`,
	} {
		_, err := DecodeChunk([]byte(in))
		if !errors.Is(err, ErrDecode) {
			t.Errorf("DecodeChunk(%q) error = %v, want ErrDecode", in, err)
		}
	}
}

func TestStreamErrorMessage(t *testing.T) {
	tests := []struct {
		e    StreamError
		want string
	}{
		{StreamError{"too long", "BadRequestError", "400"}, "server error in stream (BadRequestError, code 400): too long"},
		{StreamError{"x", "", "500"}, "server error in stream (code 500): x"},
		{StreamError{"x", "", ""}, "server error in stream: x"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// FuzzDecodeChunk checks that no input panics, that every failure wraps ErrDecode, and that a
// chunk built from the fuzzed fields decodes back to them, on both routes.
func FuzzDecodeChunk(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}`), "hi", "", 3, true)
	f.Add([]byte(`[DONE]`), "", "why", 0, false)
	f.Add([]byte("{\"error\":{\"code\":400}}\n[DONE]"), "\n[DONE]", "", -1, true)
	f.Add([]byte(`{"token":{"id":1,"text":"a","special":false}}`), "[DONE]", "r", 1<<40, false)
	f.Fuzz(func(t *testing.T, data []byte, text, reasoning string, completion int, chat bool) {
		if _, err := DecodeChunk(data); err != nil && !errors.Is(err, ErrDecode) {
			t.Fatalf("error %v does not wrap ErrDecode", err)
		}

		choice := map[string]any{"index": 0, "finish_reason": nil}
		if chat {
			choice["delta"] = map[string]any{"content": text, "reasoning_content": reasoning}
		} else {
			choice["text"] = text
		}
		chunk := map[string]any{
			"choices": []any{choice},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": completion, "total_tokens": 1 + completion},
		}
		b, err := json.Marshal(chunk)
		if err != nil {
			t.Skip()
		}
		c, err := DecodeChunk(b)
		if err != nil {
			t.Fatalf("DecodeChunk(%s): %v", b, err)
		}
		// json.Marshal replaces invalid UTF-8, so compare with the strings it actually sent.
		sent := func(s string) string {
			var back string
			if err := json.Unmarshal(mustMarshal(s), &back); err != nil {
				t.Fatal(err)
			}
			return back
		}
		if c.Text != sent(text) || !c.HasChoices || c.Done || c.Err != nil {
			t.Errorf("decoded %s from %s", show(c), b)
		}
		if chat && c.Reasoning != sent(reasoning) {
			t.Errorf("reasoning %q, want %q", c.Reasoning, sent(reasoning))
		}
		if c.Usage == nil || c.Usage.CompletionTokens != completion {
			t.Errorf("usage %+v, want completion %d", c.Usage, completion)
		}
	})
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
