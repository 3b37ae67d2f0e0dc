package openai

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Limits on how much of a response the runner reads. They are generous for real servers and
// only there so that a broken or hostile one cannot make the runner hold an unbounded body in
// memory. A body over its limit is an error that names the limit (*TooLargeError), never a
// silently shortened read: a truncated /metrics page would still parse, and lie.
const (
	// MaxJSONBody caps a JSON answer: /v1/models, /tokenize, /version, /health, a prefix cache
	// reset, ollama's /api/*. 16 MiB. The largest real one is /tokenize of a long prompt, whose
	// token ids take up to 7 bytes each ("128255,"): 16 MiB holds over two million of them, more
	// than the longest context a served model has today.
	MaxJSONBody = 16 << 20
	// MaxMetricsBody caps a Prometheus /metrics page: 32 MiB. A vLLM page is a few hundred KiB;
	// with data parallel ranks, many LoRA adapters and every histogram's buckets per label set
	// it reaches a few MiB, which leaves a factor of ten.
	MaxMetricsBody = 32 << 20
	// MaxEvent caps one line and one event of a response stream: 16 MiB. An event is one chunk,
	// normally a few hundred bytes to a few KiB even with logprobs; the largest is the first
	// chunk of a return_token_ids stream, which carries the prompt's token ids, so the limit is
	// MaxJSONBody's.
	MaxEvent = 16 << 20
	// MaxErrorBody is how much of a failed request's body the runner reads and keeps for its
	// error message: 64 KiB. The rest is left unread; a longer body is no error of its own.
	MaxErrorBody = 64 << 10
)

// TooLargeError is the error of a response body larger than the limit the runner reads of it.
type TooLargeError struct {
	What  string // what was read, e.g. "the GET /v1/models answer"
	Limit int64  // the limit, in bytes
}

// Error says what was too large and names the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the %s limit", e.What, FormatSize(e.Limit))
}

// ReadBody reads r to its end, but never more than limit+1 bytes. When r holds more than limit
// bytes it returns the first limit bytes with a *TooLargeError that names what was read; a read
// error is returned as it is. Every body the runner reads whole goes through it.
func ReadBody(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(b)) > limit {
		return b[:limit], &TooLargeError{What: what, Limit: limit}
	}
	return b, err
}

// FormatSize writes a byte count the way the limits are stated: "16 MiB", "64 KiB", "100 bytes".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// NoRedirect is an http.Client CheckRedirect function that follows no redirect: the 3xx answer
// itself is returned. A benchmark that followed one would time two requests as one, and a
// readiness probe that followed one to a login page would call a server ready that is not.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Location returns where a redirect answer points, resolved against the request's URL, with
// any user name and password dropped and the query string replaced by "[redacted]", since
// either may carry a credential. It returns "" when the answer has no Location header.
func Location(resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Not a URL: cut at the first "?" so that a query cannot leak.
		if i := strings.IndexByte(loc, '?'); i >= 0 {
			return loc[:i] + "?[redacted]"
		}
		return loc
	}
	if resp.Request != nil && resp.Request.URL != nil {
		u = resp.Request.URL.ResolveReference(u)
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	query := u.RawQuery != "" || u.ForceQuery
	u.RawQuery, u.ForceQuery = "", false
	s := u.String()
	if query {
		s += "?[redacted]"
	}
	return s
}

// MediaType returns the media type of a Content-Type header value, lower case and without its
// parameters ("text/event-stream; charset=utf-8" → "text/event-stream"); "" when the header is
// empty. A value that does not parse is returned trimmed and lower case.
func MediaType(contentType string) string {
	if strings.TrimSpace(contentType) == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		return strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}
