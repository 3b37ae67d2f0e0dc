package measure

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// checkStream tells a 2xx answer that cannot be an uncompressed event stream from one that may
// be, before any of it is timed, and says why in the error.
//
// vLLM, SGLang, llama.cpp, TGI and ollama's /v1 endpoints all send Content-Type
// text/event-stream (vLLM and SGLang add "; charset=utf-8"). A missing Content-Type, and
// text/plain, which Go's server sniffs for a handler that set none, are let through: such a
// body may still be a stream, and if it yields no event the error names its type. Every other
// type (application/json, text/html, application/x-ndjson, ...) is no stream.
func checkStream(resp *http.Response) (record.ErrorClass, error) {
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return record.ErrEncoding, fmt.Errorf("the server answered %d with Content-Encoding %q, though the runner asked for the stream uncompressed (Accept-Encoding: identity): a compressor holds events back, so their times would be wrong; turn compression off for this path in the server or the proxy in front of it", resp.StatusCode, ce)
	}
	ct := resp.Header.Get("Content-Type")
	switch mt := openai.MediaType(ct); {
	case mt == "text/event-stream" || mt == "" || mt == "text/plain":
		return record.ErrNone, nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		body, _ := openai.ReadBody(resp.Body, openai.MaxErrorBody, "")
		return record.ErrNotStream, notStreamJSON(resp, body)
	default:
		body, _ := openai.ReadBody(resp.Body, openai.MaxErrorBody, "")
		return record.ErrNotStream, fmt.Errorf("the server answered %d with Content-Type %q instead of an event stream (text/event-stream); the body starts %s", resp.StatusCode, ct, quoteStart(body))
	}
}

// notStreamJSON describes a JSON answer to a streaming request: a server that ignored
// "stream": true, or one that answered with an error object and a 2xx status.
func notStreamJSON(resp *http.Response, body []byte) error {
	msg := fmt.Sprintf("the server answered %d with a JSON body (Content-Type %q) instead of an event stream; did it ignore \"stream\": true?", resp.StatusCode, resp.Header.Get("Content-Type"))
	if ch, err := openai.DecodeChunk(body); err == nil && ch.Err != nil {
		return fmt.Errorf("%s %w", msg, ch.Err)
	}
	return fmt.Errorf("%s the body starts %s", msg, quoteStart(body))
}

// headSize is how much of a stream headReader keeps: enough for an error object.
const headSize = 4 << 10

// headReader passes reads through and keeps the first headSize bytes, so that a body that
// turns out to be no stream can be described.
type headReader struct {
	r    io.Reader
	buf  []byte
	done bool // the body proved to be a stream: nothing more is kept
}

// Read reads from the underlying reader, keeping a copy of the start.
func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if room := headSize - len(h.buf); room > 0 && n > 0 && !h.done {
		h.buf = append(h.buf, p[:min(n, room)]...)
	}
	return n, err
}

// release drops the start kept so far and keeps no more. The caller calls it once the body
// has yielded an event, after which the start is never described: under load every stream
// would otherwise hold its copy to the end.
func (h *headReader) release() { h.buf, h.done = nil, true }

// json reports whether the body starts like a JSON object or array, which no event stream does.
func (h *headReader) json() bool {
	b := bytes.TrimSpace(h.buf)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// note explains a stream that ended without any event: what its type was and how it started.
func (h *headReader) note(events int, contentType string) string {
	if events > 0 {
		return ""
	}
	if len(h.buf) == 0 {
		return "; the body was empty"
	}
	return fmt.Sprintf("; the body (Content-Type %q) holds no event, and starts %s", contentType, quoteStart(h.buf))
}

// quoteStart quotes the start of a body for an error message.
func quoteStart(b []byte) string {
	const n = 200
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}
