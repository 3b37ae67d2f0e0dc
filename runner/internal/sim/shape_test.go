package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// skeleton lists a JSON value's keys in order with the kind of each value: "id:string",
// "choices[].delta.content:string", "usage:null". Arrays of objects are described by their
// first element; other arrays are "array" (empty or not) and an empty array of objects is "[]".
func skeleton(t *testing.T, payload string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.UseNumber()
	var out []string
	var walk func(prefix string) error
	walk = func(prefix string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					p := k.(string)
					if prefix != "" {
						p = prefix + "." + p
					}
					if err := walk(p); err != nil {
						return err
					}
				}
				_, err = dec.Token()
				return err
			case '[':
				if !dec.More() {
					out = append(out, prefix+":[]")
					_, err = dec.Token()
					return err
				}
				// Look at the first element: objects are described, scalars are not.
				var elems []json.RawMessage
				for dec.More() {
					var e json.RawMessage
					if err := dec.Decode(&e); err != nil {
						return err
					}
					elems = append(elems, e)
				}
				if _, err := dec.Token(); err != nil {
					return err
				}
				if bytes.HasPrefix(bytes.TrimSpace(elems[0]), []byte("{")) {
					for _, k := range skeleton(t, string(elems[0])) {
						out = append(out, prefix+"[]."+k)
					}
					return nil
				}
				out = append(out, prefix+":array")
				return nil
			}
		case nil:
			out = append(out, prefix+":null")
		case string:
			out = append(out, prefix+":string")
		case json.Number:
			out = append(out, prefix+":number")
		case bool:
			out = append(out, prefix+":bool")
		}
		return nil
	}
	if err := walk(""); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("skeleton of %s: %v", payload, err)
	}
	return out
}

// class names the kind of a streamed chunk: role, first (first completions chunk), content,
// finish or usage.
func class(t *testing.T, payload string, index int) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Delta *struct {
				Role *string `json:"role"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(payload), &c); err != nil {
		t.Fatalf("chunk %s: %v", payload, err)
	}
	switch {
	case len(c.Choices) == 0:
		return "usage"
	case c.Choices[0].Delta != nil && c.Choices[0].Delta.Role != nil:
		return "role"
	case c.Choices[0].FinishReason != nil:
		return "finish"
	case index == 0:
		return "first"
	}
	return "content"
}

// TestChunkShapes compares the simulator's streams, key by key and in order, with hand-written
// reference streams in vLLM's shapes (testdata/vllm_shapes/README.md says where they come from).
func TestChunkShapes(t *testing.T) {
	cases := []struct {
		ref, path, body string
	}{
		{"chat_plain.sse", "/v1/chat/completions", `{` + chatMsgs + `,"max_tokens":5,"stream":true}`},
		{"chat_usage_token_ids.sse", "/v1/chat/completions", `{` + chatMsgs + `,"max_tokens":5,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"completions_plain.sse", "/v1/completions", `{` + cmplPrompt + `,"max_tokens":5,"stream":true}`},
		{"completions_usage_token_ids.sse", "/v1/completions", `{` + cmplPrompt + `,"max_tokens":5,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	}
	_, ts := startServer(t, nil)
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join("testdata", "vllm_shapes", tc.ref))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]string{}
			for i, p := range dataEvents(t, ref) {
				if p != "[DONE]" {
					want[class(t, p, i)] = skeleton(t, p)
				}
			}
			resp, body, err := post(t, ts, tc.path, tc.body, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, err %v: %s", resp.StatusCode, err, body)
			}
			if got := resp.Header.Get("Content-Type"); got != "text/event-stream; charset=utf-8" {
				t.Errorf("Content-Type %q, want text/event-stream; charset=utf-8", got)
			}
			// Framing: "data: <json>\n\n" events only, ending with "data: [DONE]\n\n".
			if !bytes.HasSuffix(body, []byte("\n\ndata: [DONE]\n\n")) {
				t.Errorf("stream does not end with data: [DONE] and a blank line: %q", body[max(0, len(body)-40):])
			}
			for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
				if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
					t.Errorf("event %q is not one data line", ev)
				}
			}
			seen := map[string]bool{}
			for i, p := range dataEvents(t, body) {
				if p == "[DONE]" {
					continue
				}
				c := class(t, p, i)
				seen[c] = true
				w, ok := want[c]
				if !ok {
					t.Errorf("event %d is a %s chunk, which the reference stream has none of: %s", i, c, p)
					continue
				}
				if got := skeleton(t, p); !slices.Equal(got, w) {
					t.Errorf("event %d (%s) keys differ from vLLM's:\n got %v\nwant %v", i, c, got, w)
				}
			}
			for c := range want {
				if !seen[c] && c != "first" {
					t.Errorf("the stream has no %s chunk, the reference does", c)
				}
			}
		})
	}
}

// TestSkeleton pins the helper the shape test relies on.
func TestSkeleton(t *testing.T) {
	got := skeleton(t, `{"a":1,"b":[{"c":null,"d":"x"}],"e":[],"f":[1,2],"g":{"h":true}}`)
	want := []string{"a:number", "b[].c:null", "b[].d:string", "e:[]", "f:array", "g.h:bool"}
	if !slices.Equal(got, want) {
		t.Errorf("skeleton = %v, want %v", got, want)
	}
	if fmt.Sprint(skeleton(t, `{"choices":[]}`)) != "[choices:[]]" {
		t.Errorf("empty choices: %v", skeleton(t, `{"choices":[]}`))
	}
}
