package measure

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// okStream is a complete, well-formed completions stream.
const okStream = "data: {\"choices\":[{\"index\":0,\"text\":\"Hello\"}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"text\":\" world\",\"finish_reason\":\"length\"}]}\n\n" +
	"data: [DONE]\n\n"

// TestNotAStream checks that a 2xx answer that is no uncompressed event stream fails with a
// class that says so and an error that names what came instead, rather than as a stream that
// ended after 0 events.
func TestNotAStream(t *testing.T) {
	tests := []struct {
		name        string
		contentType string // "-" sends none
		encoding    string
		body        string
		want        record.ErrorClass
		wantErr     []string
	}{
		{"html", "text/html; charset=utf-8", "", "<html><body>Sign in</body></html>", record.ErrNotStream,
			[]string{`answered 200 with Content-Type "text/html; charset=utf-8" instead of an event stream`, "Sign in"}},
		{"ndjson", "application/x-ndjson", "", `{"model":"m","response":"Hi","done":false}` + "\n", record.ErrNotStream,
			[]string{`Content-Type "application/x-ndjson"`}},
		{"ignored stream", "application/json", "", `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"Hello world","finish_reason":"length"}]}`, record.ErrNotStream,
			[]string{`answered 200 with a JSON body (Content-Type "application/json")`, `did it ignore "stream": true?`, "cmpl-1"}},
		{"error object", "application/json", "", `{"error":{"message":"The model does not exist.","type":"NotFoundError","code":404}}`, record.ErrNotStream,
			[]string{"did it ignore", "The model does not exist."}},
		{"vllm error object", "application/json; charset=utf-8", "", `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","code":400}`, record.ErrNotStream,
			[]string{"max_tokens is too large"}},
		{"json without a type", "-", "", `{"error":{"message":"overloaded"}}`, record.ErrNotStream,
			[]string{`JSON body (Content-Type "")`, "overloaded"}},
		{"json as a stream", "text/event-stream", "", `{"error":{"message":"overloaded"}}`, record.ErrNotStream,
			[]string{"overloaded"}},
		{"gzip", "text/event-stream", "gzip", okStream, record.ErrEncoding,
			[]string{`Content-Encoding "gzip"`, "Accept-Encoding: identity"}},
		{"brotli", "text/event-stream", "br", okStream, record.ErrEncoding,
			[]string{`Content-Encoding "br"`}},
		{"empty", "text/event-stream", "", "", record.ErrTruncated,
			[]string{"stream ended after 0 events without [DONE]; the body was empty"}},
		{"plain text, no events", "text/plain; charset=utf-8", "", "upstream connect error", record.ErrTruncated,
			[]string{`the body (Content-Type "text/plain; charset=utf-8") holds no event, and starts "upstream connect error"`}},
		// Tolerated types that carry a stream are measured.
		{"plain text stream", "text/plain; charset=utf-8", "", okStream, record.ErrNone, nil},
		{"stream without a type", "-", "", okStream, record.ErrNone, nil},
		{"identity", "text/event-stream", "identity", okStream, record.ErrNone, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acceptEncoding atomic.Value
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				acceptEncoding.Store(r.Header.Get("Accept-Encoding"))
				if tt.contentType == "-" {
					w.Header()["Content-Type"] = nil // no sniffing: no header at all
				} else {
					w.Header().Set("Content-Type", tt.contentType)
				}
				if tt.encoding != "" {
					w.Header().Set("Content-Encoding", tt.encoding)
				}
				if tt.encoding == "gzip" {
					zw := gzip.NewWriter(w)
					io.WriteString(zw, tt.body)
					zw.Close()
					return
				}
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			rec, err := c.Do(context.Background(), spec(openai.Completions, 2))
			if err != nil {
				t.Fatal(err)
			}
			if got := acceptEncoding.Load(); got != "identity" {
				t.Errorf("Accept-Encoding %q, want identity", got)
			}
			if rec.ErrorClass != tt.want {
				t.Fatalf("class %q (%s), want %q", rec.ErrorClass, rec.Error, tt.want)
			}
			if tt.want == record.ErrNone {
				if rec.Status != record.StatusOK || rec.TTFT == nil {
					t.Fatalf("status %s, ttft %v; want a measured request", rec.Status, rec.TTFT)
				}
				return
			}
			if rec.Status != record.StatusFailed || rec.TTFT != nil {
				t.Errorf("status %s, ttft %v; want failed without metrics", rec.Status, rec.TTFT)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(rec.Error, w) {
					t.Errorf("error %q does not say %q", rec.Error, w)
				}
			}
		})
	}
}

// TestTransparentGzipOff checks that even a client that would ask for gzip and decode it
// behind the runner's back (http.DefaultTransport) sends the stream request with identity
// encoding, so that no compressor sits between the server's events and their timestamps.
func TestTransparentGzipOff(t *testing.T) {
	var got atomic.Value
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, okStream)
	}))
	defer ts.Close()
	c := &Client{API: &openai.Client{BaseURL: ts.URL}, HTTP: &http.Client{Transport: http.DefaultTransport}}
	rec, err := c.Do(context.Background(), spec(openai.Completions, 2))
	if err != nil || rec.Status != record.StatusOK {
		t.Fatalf("%v %s %s", err, rec.ErrorClass, rec.Error)
	}
	if got.Load() != "identity" {
		t.Errorf("Accept-Encoding %q, want identity", got.Load())
	}
}

// TestRedirectNotFollowed checks that a redirect is a failed request of class redirect that
// names where it pointed (without the query string), and that the runner did not go there.
func TestRedirectNotFollowed(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var followed atomic.Bool
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/gateway/v1/completions" {
					followed.Store(true)
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, okStream)
					return
				}
				http.Redirect(w, r, "/gateway/v1/completions?api_key=s3cret", status)
			}))
			defer ts.Close()
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			rec, err := c.Do(context.Background(), spec(openai.Completions, 2))
			if err != nil {
				t.Fatal(err)
			}
			if followed.Load() {
				t.Fatal("the redirect was followed")
			}
			if rec.ErrorClass != record.ErrRedirect || rec.HTTPStatus != status {
				t.Fatalf("class %q, status %d (%s); want redirect, %d", rec.ErrorClass, rec.HTTPStatus, rec.Error, status)
			}
			want := "a redirect to " + ts.URL + "/gateway/v1/completions?[redacted], which the runner does not follow"
			if !strings.Contains(rec.Error, want) || strings.Contains(rec.Error, "s3cret") {
				t.Errorf("error %q, want one saying %q and no query string", rec.Error, want)
			}
		})
	}
}

// countingTransport counts the response body bytes the client read.
type countingTransport struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.n}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestEventLimit checks the limit on one line and one event of a stream: an endless line and
// an endless event stop at 16 MiB with the class event_too_large and an error naming the limit,
// after reading no more than the limit and a little; an event of a few MiB, as the first chunk
// of a long prompt's return_token_ids stream is, is measured.
func TestEventLimit(t *testing.T) {
	const limit = 16 << 20
	big := "data: {\"choices\":[{\"index\":0,\"text\":\"Hello\"}],\"prompt_token_ids\":[" +
		strings.Repeat("128000,", 3<<20/7) + "1]}\n\n"
	tests := []struct {
		name   string
		prefix string // written once
		unit   string // then written forever; "" ends the body after prefix
		want   record.ErrorClass
	}{
		{"endless line", "data: {\"choices\":[{\"index\":0,\"text\":\"", "x", record.ErrEventTooLarge},
		// Lines of data that never end the event: the data held is what is capped, so the
		// lines are long enough that the bytes read track it.
		{"endless event", "", "data: " + strings.Repeat("x", 4090) + "\n", record.ErrEventTooLarge},
		{"3 MiB event", big + okStream, "", record.ErrNone},
		// Nothing but comments, or fields that dispatch nothing: bounded by lines, then by
		// bytes when the lines are long.
		{"endless comments", "", ": keep-alive\n", record.ErrNoEvent},
		{"endless event lines", "", "event: ping\n\n", record.ErrNoEvent},
		{"endless long comments", "", ":" + strings.Repeat("x", 4090) + "\n", record.ErrNoEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.prefix)
				if tt.unit == "" {
					return
				}
				chunk := []byte(strings.Repeat(tt.unit, (64<<10)/len(tt.unit)))
				for {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			defer ts.Close()
			tr := &countingTransport{rt: NewHTTP().Transport}
			c := &Client{API: &openai.Client{BaseURL: ts.URL}, HTTP: &http.Client{Transport: tr}}
			// Reading 16 MiB takes seconds under the race detector on a busy machine: the
			// request's deadline is only a safety net, far past what the limit needs.
			sp := spec(openai.Completions, 2)
			sp.Timeout = 5 * time.Minute
			rec, err := c.Do(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if rec.ErrorClass != tt.want {
				t.Fatalf("class %q (%.300s), want %q", rec.ErrorClass, rec.Error, tt.want)
			}
			if tt.want == record.ErrNone {
				return
			}
			want := "a line or event is larger than the 16 MiB limit"
			if tt.want == record.ErrNoEvent {
				want = "only comments or fields without data, past the limit of 10000 lines or 16 MiB"
			}
			if !strings.Contains(rec.Error, want) {
				t.Errorf("error %q does not say %q", rec.Error, want)
			}
			if n := tr.n.Load(); n > limit+128<<10 {
				t.Errorf("read %d bytes of the stream, want at most the limit %d and a little", n, limit)
			}
		})
	}
}

// TestHeadReaderRelease checks that headReader passes every byte through, keeps at most
// headSize of the start, and keeps nothing once released.
func TestHeadReaderRelease(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		releaseAt int // reads before release; -1: never
		want      string
	}{
		{"kept", `{"error": "no stream"}`, -1, `{"error": "no stream"}`},
		{"capped", strings.Repeat("x", headSize+100), -1, strings.Repeat("x", headSize)},
		{"released after the first read", "data: {}\n\n" + strings.Repeat("y", 100), 1, ""},
		{"released before any read", "data: {}\n\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &headReader{r: iotest.OneByteReader(strings.NewReader(tt.body))}
			var got []byte
			buf := make([]byte, 16)
			for reads := 0; ; reads++ {
				if reads == tt.releaseAt {
					h.release()
				}
				n, err := h.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if string(got) != tt.body {
				t.Errorf("passed through %d bytes, want the %d of the body", len(got), len(tt.body))
			}
			if string(h.buf) != tt.want {
				t.Errorf("kept %q, want %q", h.buf, tt.want)
			}
		})
	}
}
