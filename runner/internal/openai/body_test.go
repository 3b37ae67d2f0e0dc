package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// endless writes unit over and over until the client goes away.
func endless(unit string) http.HandlerFunc {
	chunk := []byte(strings.Repeat(unit, (64<<10)/len(unit)))
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// countingTransport counts the response body bytes the client read.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
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

// TestSideEndpointBodyLimit checks that an endless answer of every side endpoint stops at its
// limit with an error that names the endpoint and the limit, after reading no more than the
// limit (and one byte): a truncated answer is never used, and memory stays bounded.
func TestSideEndpointBodyLimit(t *testing.T) {
	tests := []struct {
		name  string
		unit  string // repeated forever: valid JSON whitespace, or Prometheus comment lines
		call  func(*Client) error
		what  string
		limit int64
	}{
		{"models", " ", func(c *Client) error { _, err := c.Models(context.Background()); return err },
			"the GET /v1/models answer is larger than the 16 MiB limit", 16 << 20},
		{"tokenize", " ", func(c *Client) error {
			_, err := c.Tokenize(context.Background(), TokenizeRequest{Prompt: "a"})
			return err
		}, "the POST /tokenize answer is larger than the 16 MiB limit", 16 << 20},
		{"version", " ", func(c *Client) error { _, err := c.Version(context.Background()); return err },
			"the GET /version answer is larger than the 16 MiB limit", 16 << 20},
		{"health", " ", func(c *Client) error { return c.Health(context.Background()) },
			"the GET /health answer is larger than the 16 MiB limit", 16 << 20},
		{"reset", " ", func(c *Client) error { return c.ResetPrefixCache(context.Background()) },
			"the POST /reset_prefix_cache answer is larger than the 16 MiB limit", 16 << 20},
		// A page of comments parses: cut at any length it would have passed for a whole page.
		{"metrics", "# a comment line\n", func(c *Client) error { _, err := c.Metrics(context.Background()); return err },
			"the GET /metrics answer is larger than the 32 MiB limit", 32 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(endless(tt.unit))
			defer ts.Close()
			tr := &countingTransport{}
			c := &Client{BaseURL: ts.URL, HTTP: &http.Client{Transport: tr}}
			err := tt.call(c)
			if err == nil || !strings.Contains(err.Error(), tt.what) {
				t.Fatalf("error %v, want one saying %q", err, tt.what)
			}
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Limit != tt.limit {
				t.Errorf("error %v is no *TooLargeError with limit %d", err, tt.limit)
			}
			// The transport reads ahead by at most its buffer (4 KiB) beyond what was asked.
			if n := tr.n.Load(); n > tt.limit+64<<10 {
				t.Errorf("read %d bytes of the body, want at most the limit %d and a little", n, tt.limit)
			}
		})
	}
}

// TestSideEndpointBodyAtLimit checks that an answer of exactly the limit is read whole.
func TestSideEndpointBodyAtLimit(t *testing.T) {
	body := `{"version":"1"}` + strings.Repeat(" ", MaxJSONBody-len(`{"version":"1"}`))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	defer ts.Close()
	v, err := (&Client{BaseURL: ts.URL}).Version(context.Background())
	if err != nil || v != "1" {
		t.Fatalf("version %q, %v; want 1", v, err)
	}
}

// TestReadBody checks the one capped read: under, at and over the limit.
func TestReadBody(t *testing.T) {
	tests := []struct {
		in      string
		limit   int64
		want    string
		wantErr string
	}{
		{"", 4, "", ""},
		{"abc", 4, "abc", ""},
		{"abcd", 4, "abcd", ""},
		{"abcde", 4, "abcd", "the body is larger than the 4 bytes limit"},
		{strings.Repeat("x", 3<<10), 2 << 10, strings.Repeat("x", 2<<10), "the body is larger than the 2 KiB limit"},
	}
	for _, tt := range tests {
		got, err := ReadBody(strings.NewReader(tt.in), tt.limit, "the body")
		if string(got) != tt.want {
			t.Errorf("ReadBody(%d bytes, %d) = %d bytes, want %d", len(tt.in), tt.limit, len(got), len(tt.want))
		}
		if (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
			t.Errorf("ReadBody(%d bytes, %d): error %v, want %q", len(tt.in), tt.limit, err, tt.wantErr)
		}
	}
}

// TestSideEndpointRedirect checks that a side endpoint's redirect is not followed, and that the
// error names where it pointed without its query string.
func TestSideEndpointRedirect(t *testing.T) {
	var followed atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			followed.Store(true)
			io.WriteString(w, `{"version":"from the login page"}`)
			return
		}
		http.Redirect(w, r, "/login?token=s3cret&next=%2Fversion", http.StatusFound)
	}))
	defer ts.Close()
	_, err := (&Client{BaseURL: ts.URL}).Version(context.Background())
	if followed.Load() {
		t.Fatal("the redirect was followed")
	}
	want := "302 Found, a redirect to " + ts.URL + "/login?[redacted], which the runner does not follow"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one saying %q", err, want)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the query string: %v", err)
	}
}

// TestLocation checks how a redirect target is shown.
func TestLocation(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8000/v1/completions", nil)
	tests := []struct{ loc, want string }{
		{"", ""},
		{"/v1/completions/", "http://127.0.0.1:8000/v1/completions/"},
		{"https://gw.example/v1?key=abc#frag", "https://gw.example/v1?[redacted]"},
		{"https://user:pw@gw.example/v1", "https://gw.example/v1"},
		{"http://[::1:bad/x?k=v", "http://[::1:bad/x?[redacted]"},
	}
	for _, tt := range tests {
		resp := &http.Response{Header: http.Header{}, Request: req}
		if tt.loc != "" {
			resp.Header.Set("Location", tt.loc)
		}
		if got := Location(resp); got != tt.want {
			t.Errorf("Location(%q) = %q, want %q", tt.loc, got, tt.want)
		}
	}
}

// TestMediaType checks the Content-Type reduction the stream check relies on.
func TestMediaType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"text/event-stream", "text/event-stream"},
		{"Text/Event-Stream; charset=utf-8", "text/event-stream"},
		{"application/json", "application/json"},
		{"text/html; charset", "text/html"},
	}
	for _, tt := range tests {
		if got := MediaType(tt.in); got != tt.want {
			t.Errorf("MediaType(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
