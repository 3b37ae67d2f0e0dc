// Package openai speaks the OpenAI-compatible HTTP dialect of LLM servers (vLLM, SGLang,
// llama.cpp, ollama, TGI, OpenAI itself) as far as a latency measurement needs: it builds
// streaming request bodies for /v1/completions and /v1/chat/completions, decodes the streamed
// chunks, counts output tokens from what the chunks say, and calls the side endpoints
// (/tokenize, /v1/models, /version, /metrics, /health, /reset_prefix_cache).
//
// It does not send the streaming request or time it; the caller does, reading the body with
// package sse and handing each event's data to DecodeChunk and each chunk to a Tally.
package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Chunk is one decoded streamed chunk.
//
// A chunk is a text event, as docs/metrics.md defines it, when Text is not empty. Text is
// choices[0].text (completions) or choices[0].delta.content (chat); either is accepted on either
// route, since llama.cpp and TGI send completions-shaped chunks on the chat route and the other
// way round. Reasoning text ("reasoning_content" from llama.cpp, vLLM and SGLang, "reasoning"
// from ollama) is not answer text: it never makes a chunk a text event, so TTFT is the time to
// the first answer text a chat user sees. It is kept apart in Reasoning so that a caller can
// record how much of it there was.
type Chunk struct {
	// Done is true for the "[DONE]" sentinel. It can come with an error object when a server
	// sends both in one event (see DecodeChunk).
	Done bool
	// Text is the generated answer text this chunk carries; empty for role-only chunks,
	// empty deltas, finish chunks without text and usage-only chunks.
	Text string
	// Reasoning is the reasoning text this chunk carries, if any.
	Reasoning string
	// ToolCalls is true when choices[0].delta carries tool-call deltas.
	ToolCalls bool
	// HasChoices is true when the chunk has a non-empty "choices" array. A chunk with usage
	// and no choices is the final usage chunk of a stream with include_usage.
	HasChoices bool
	// FinishReason is choices[0].finish_reason, or "" while the choice is unfinished.
	FinishReason string
	// TokenIDs is choices[0].token_ids (vLLM's return_token_ids), or nil when absent or null.
	// For TGI's native /generate_stream events it is the one token's id.
	TokenIDs []int
	// Usage is the chunk's usage object; nil when absent or null.
	Usage *Usage
	// Err is an in-band error object; nil when there is none.
	Err *StreamError
}

// IsText reports whether the chunk is a text event: it carries non-empty answer text.
func (c Chunk) IsText() bool { return c.Text != "" }

// Usage is a chunk's token usage.
type Usage struct {
	PromptTokens     int // usage.prompt_tokens
	CompletionTokens int // usage.completion_tokens: the output tokens so far, or in all
	TotalTokens      int // usage.total_tokens
	// ReasoningTokens is completion_tokens_details.reasoning_tokens (OpenAI) or usage's own
	// reasoning_tokens (SGLang), 0 when absent. It is part of CompletionTokens.
	ReasoningTokens int
}

// zero reports whether every count is zero, as in the placeholder usage that ollama puts on
// every chunk when include_usage is on.
func (u Usage) zero() bool {
	return u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0
}

// negative reports whether any count is below zero. No generation has a negative number of
// tokens, so such a usage is a fault of the server's reporting and counts nothing.
func (u Usage) negative() bool {
	return u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.ReasoningTokens < 0
}

// StreamError is an error object a server sent inside the stream, after HTTP 200.
type StreamError struct {
	Message string // the server's message
	Type    string // e.g. "BadRequestError", "invalid_request_error"
	Code    string // a number or a string on the wire; kept as text
}

// Error returns the server's message with its type and code.
func (e *StreamError) Error() string {
	s := "server error in stream"
	if e.Type != "" {
		s += " (" + e.Type
		if e.Code != "" {
			s += ", code " + e.Code
		}
		s += ")"
	} else if e.Code != "" {
		s += " (code " + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// ErrDecode is wrapped by every error DecodeChunk returns.
var ErrDecode = errors.New("cannot decode chunk")

var doneMarker = []byte("[DONE]")

// DecodeChunk decodes the data of one SSE event.
//
// Besides the OpenAI chunk shapes it understands the in-band error shapes
// {"error": {"message", "type", "code"}}, {"error": "text", "error_type": "..."} (TGI) and
// {"object": "error", "message", "type", "code"} (older vLLM), and TGI's native
// /generate_stream events {"token": {"id", "text", "special"}, ...}, whose token text counts as
// Text unless the token is special.
//
// Data whose last line is "[DONE]" after other lines, which is what an SSE reader makes of a
// stream that sends an event's line and "data: [DONE]" without a blank line between them (as
// SGLang was seen to do after an error), decodes as the first part with Done also set.
// Whitespace-only data decodes as an empty chunk.
func DecodeChunk(data []byte) (Chunk, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, doneMarker) {
		return Chunk{Done: true}, nil
	}
	if len(data) == 0 {
		return Chunk{}, nil
	}
	done := false
	if bytes.HasSuffix(data, doneMarker) {
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 && bytes.Equal(bytes.TrimSpace(data[i+1:]), doneMarker) {
			data = bytes.TrimSpace(data[:i])
			done = true
		}
	}
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return Chunk{}, fmt.Errorf("%w: %w: %s", ErrDecode, err, excerpt(data))
	}
	c := Chunk{Done: done, HasChoices: len(w.Choices) > 0}
	if w.Usage != nil {
		u := Usage{
			PromptTokens:     w.Usage.PromptTokens,
			CompletionTokens: w.Usage.CompletionTokens,
			TotalTokens:      w.Usage.TotalTokens,
			ReasoningTokens:  w.Usage.ReasoningTokens,
		}
		if d := w.Usage.CompletionTokensDetails; d != nil && d.ReasoningTokens > 0 {
			u.ReasoningTokens = d.ReasoningTokens
		}
		c.Usage = &u
	}
	if len(w.Choices) > 0 {
		ch := &w.Choices[0]
		c.Text = ch.Text
		if c.Text == "" && ch.Delta != nil {
			c.Text = ch.Delta.Content
		}
		if ch.Delta != nil {
			c.Reasoning = ch.Delta.ReasoningContent
			if c.Reasoning == "" {
				c.Reasoning = ch.Delta.Reasoning
			}
			c.ToolCalls = len(ch.Delta.ToolCalls) > 0 && !isNull(ch.Delta.ToolCalls) && !bytes.Equal(ch.Delta.ToolCalls, []byte("[]"))
		}
		c.FinishReason = ch.FinishReason
		c.TokenIDs = ch.TokenIDs
	} else if w.Token != nil {
		if !w.Token.Special {
			c.Text = w.Token.Text
		}
		c.TokenIDs = []int{w.Token.ID}
		if w.Details != nil {
			c.FinishReason = w.Details.FinishReason
		}
	}
	e, err := w.streamError()
	if err != nil {
		return Chunk{}, fmt.Errorf("%w: %w: %s", ErrDecode, err, excerpt(data))
	}
	c.Err = e
	return c, nil
}

// wireChunk is the union of the chunk shapes DecodeChunk reads. Unknown fields are skipped.
type wireChunk struct {
	Object  string       `json:"object"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`

	// In-band errors.
	Error     json.RawMessage `json:"error"`
	ErrorType string          `json:"error_type"`
	Message   string          `json:"message"`
	Type      string          `json:"type"`
	Code      json.RawMessage `json:"code"`

	// TGI's native /generate_stream.
	Token   *wireToken   `json:"token"`
	Details *wireDetails `json:"details"`
}

type wireChoice struct {
	Text         string     `json:"text"`
	Delta        *wireDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
	TokenIDs     []int      `json:"token_ids"`
}

type wireDelta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

type wireUsage struct {
	PromptTokens            int                  `json:"prompt_tokens"`
	CompletionTokens        int                  `json:"completion_tokens"`
	TotalTokens             int                  `json:"total_tokens"`
	ReasoningTokens         int                  `json:"reasoning_tokens"`
	CompletionTokensDetails *wireCompletionUsage `json:"completion_tokens_details"`
}

type wireCompletionUsage struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type wireToken struct {
	ID      int    `json:"id"`
	Text    string `json:"text"`
	Special bool   `json:"special"`
}

type wireDetails struct {
	FinishReason string `json:"finish_reason"`
}

type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// streamError extracts an in-band error, if the chunk is one.
func (w *wireChunk) streamError() (*StreamError, error) {
	if len(w.Error) > 0 && !isNull(w.Error) {
		switch w.Error[0] {
		case '{':
			var e wireError
			if err := json.Unmarshal(w.Error, &e); err != nil {
				return nil, fmt.Errorf("error object: %w", err)
			}
			return &StreamError{Message: e.Message, Type: e.Type, Code: rawText(e.Code)}, nil
		case '"':
			var msg string
			if err := json.Unmarshal(w.Error, &msg); err != nil {
				return nil, fmt.Errorf("error string: %w", err)
			}
			return &StreamError{Message: msg, Type: w.ErrorType}, nil
		default:
			return &StreamError{Message: string(w.Error), Type: w.ErrorType}, nil
		}
	}
	if w.Object == "error" {
		return &StreamError{Message: w.Message, Type: w.Type, Code: rawText(w.Code)}, nil
	}
	return nil, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// rawText renders a JSON scalar as text: a string without its quotes, anything else as is.
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	if raw[0] == '"' {
		if s, err := strconv.Unquote(string(raw)); err == nil {
			return s
		}
	}
	return string(raw)
}

// excerpt quotes the start of data for an error message.
func excerpt(data []byte) string {
	const n = 120
	if len(data) > n {
		return strconv.Quote(string(data[:n])) + "..."
	}
	return strconv.Quote(string(data))
}
