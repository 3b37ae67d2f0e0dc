package openai

import (
	"fmt"
	"testing"
)

func TestBody(t *testing.T) {
	yes, no := true, false
	ten, seed := 10, 7
	zero := 0.0
	tests := []struct {
		name string
		p    Params
		want string
	}{
		{"completions minimal",
			Params{API: Completions, Prompt: "Hi"},
			`{"prompt":"Hi","stream":true}`},
		{"chat wraps one user message",
			Params{API: Chat, Model: "m", Prompt: "Hi <there> & \"you\""},
			`{"messages":[{"content":"Hi <there> & \"you\"","role":"user"}],"model":"m","stream":true}`},
		{"every field",
			Params{API: Completions, Model: "m", Prompt: "p", MaxTokens: 64, IgnoreEOS: &yes, MinTokens: &ten,
				Temperature: &zero, Seed: &seed, Stop: []string{"\n\n"},
				Options: Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true}},
			`{"ignore_eos":true,"max_tokens":64,"min_tokens":10,"model":"m","prompt":"p","return_token_ids":true,"seed":7,"stop":["\n\n"],"stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true},"temperature":0}`},
		{"ignore_eos false is sent",
			Params{API: Completions, Prompt: "p", IgnoreEOS: &no},
			`{"ignore_eos":false,"prompt":"p","stream":true}`},
		{"include usage only",
			Params{API: Chat, Prompt: "p", Options: Options{IncludeUsage: true}},
			`{"messages":[{"content":"p","role":"user"}],"stream":true,"stream_options":{"include_usage":true}}`},
		{"continuous usage implies include usage",
			Params{API: Chat, Prompt: "p", Options: Options{ContinuousUsage: true}},
			`{"messages":[{"content":"p","role":"user"}],"stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true}}`},
		{"extra wins and merges objects",
			Params{API: Completions, Prompt: "p", Temperature: &zero, Options: Options{IncludeUsage: true},
				Extra: map[string]any{"temperature": 0.7, "top_k": 5, "stream_options": map[string]any{"include_usage": false, "x": 1}}},
			`{"prompt":"p","stream":true,"stream_options":{"include_usage":false,"x":1},"temperature":0.7,"top_k":5}`},
		{"extra replaces a non-object",
			Params{API: Completions, Prompt: "p", Extra: map[string]any{"stream": false, "prompt": []string{"a", "b"}}},
			`{"prompt":["a","b"],"stream":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Body(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Body()\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestBodyLeavesExtraAlone(t *testing.T) {
	so := map[string]any{"x": 1}
	extra := map[string]any{"stream_options": so}
	if _, err := Body(Params{API: Chat, Prompt: "p", Options: Options{IncludeUsage: true}, Extra: extra}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(so) != "map[x:1]" {
		t.Errorf("Body changed the caller's extra map: %v", so)
	}
}

func TestBodyUnknownAPI(t *testing.T) {
	if _, err := Body(Params{API: "embeddings"}); err == nil {
		t.Error("Body accepted an unknown api")
	}
	if Completions.Path() != "/v1/completions" || Chat.Path() != "/v1/chat/completions" || API("x").Path() != "" {
		t.Error("Path() is wrong")
	}
}

func TestDegrade(t *testing.T) {
	all := Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true}
	usage := Options{IncludeUsage: true, ContinuousUsage: true}
	tests := []struct {
		name   string
		status int
		body   string
		in     Options
		drop   Drop
		out    Options
	}{
		{"openai names return_token_ids", 400,
			`{"error":{"message":"Unrecognized request argument supplied: return_token_ids","type":"invalid_request_error","param":null,"code":null}}`,
			all, DropReturnTokenIDs, usage},
		{"openai names a stream_options field", 400,
			`{"error":{"message":"Unknown parameter: 'stream_options.continuous_usage_stats'.","type":"invalid_request_error","param":"stream_options.continuous_usage_stats","code":"unknown_parameter"}}`,
			usage, DropContinuousUsage, Options{IncludeUsage: true}},
		{"pydantic rejects stream_options", 422,
			`{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted"}]}`,
			Options{IncludeUsage: true}, DropStreamOptions, Options{}},
		{"include_usage named", 400, `{"error":"include_usage is not allowed"}`,
			Options{IncludeUsage: true, ReturnTokenIDs: false}, DropStreamOptions, Options{}},
		{"serde unknown field without a name we know", 422,
			"Failed to deserialize the JSON body into the target type: unknown field `foo`",
			all, DropReturnTokenIDs, usage},
		{"ladder second rung", 422, "unknown field", usage, DropContinuousUsage, Options{IncludeUsage: true}},
		{"ladder last rung", 422, "unknown field", Options{IncludeUsage: true}, DropStreamOptions, Options{}},
		{"nothing left to drop", 422, "unknown field", Options{}, DropNone, Options{}},
		{"named option already off", 400, "Unrecognized request argument supplied: return_token_ids",
			Options{}, DropNone, Options{}},
		{"other 400s are not about options", 400,
			`{"object":"error","message":"This model's maximum context length is 1024 tokens.","type":"BadRequestError","code":400}`,
			all, DropNone, all},
		{"server errors are not about options", 500, "unknown field return_token_ids", all, DropNone, all},
		{"404 is not about options", 404, "Not Found", all, DropNone, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, drop := Degrade(tt.status, []byte(tt.body), tt.in)
			if drop != tt.drop || out != tt.out {
				t.Errorf("Degrade = %+v, %q; want %+v, %q", out, drop, tt.out, tt.drop)
			}
		})
	}
}

// TestDegradeLadder walks the whole ladder with a server that rejects anything unknown
// without saying what.
func TestDegradeLadder(t *testing.T) {
	o := Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true}
	var drops []Drop
	for i := 0; i < 5; i++ {
		next, d := Degrade(422, []byte(`{"detail":"Extra inputs are not permitted"}`), o)
		if d == DropNone {
			break
		}
		drops = append(drops, d)
		o = next
	}
	if fmt.Sprint(drops) != "[return_token_ids continuous_usage_stats stream_options]" || o != (Options{}) {
		t.Errorf("ladder %v ending at %+v", drops, o)
	}
}
