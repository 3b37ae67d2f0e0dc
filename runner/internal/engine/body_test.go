package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
)

// TestReadinessRedirect checks that a readiness path that redirects fails the boot at once,
// naming where it pointed without the query string, instead of following it to a page that
// answers 200 and calling the server ready.
func TestReadinessRedirect(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			followed.Store(true)
			io.WriteString(w, `{"object":"list","data":[{"id":"login-page"}]}`)
			return
		}
		http.Redirect(w, r, "/login?session=s3cret", http.StatusFound)
	}))
	defer ts.Close()
	begin := time.Now()
	_, _, err := start(t, experiment.Server{Engine: "endpoint", Model: "m", URL: ts.URL, ReadyTimeout: time.Minute}, StartOptions{})
	var be *BootError
	if !errors.As(err, &be) {
		t.Fatalf("Start: %v, want a *BootError", err)
	}
	if followed.Load() {
		t.Error("the redirect was followed")
	}
	if want := "GET /v1/models answered 302 Found, a redirect to " + ts.URL + "/login?[redacted]"; !strings.Contains(be.Reason, want) {
		t.Errorf("reason %q, want one saying %q", be.Reason, want)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the query string: %v", err)
	}
	if !strings.Contains(be.Hint, "server.url") {
		t.Errorf("hint %q does not say what to change", be.Hint)
	}
	// Waiting for readiness instead would take the whole minute of ReadyTimeout.
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("the boot failed after %s: a redirect should end it at once", d)
	}
}

// TestHookBodyLimit checks that an endless answer to one of the runner's own requests to the
// server (here the model list read after readiness) stops at the limit with an error that names
// it, and that the runner carries on with the configured model name.
func TestHookBodyLimit(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	s, log, err := start(t, experiment.Server{Engine: "endpoint", Model: "m", URL: ts.URL, ReadyPath: "/health"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != "m" {
		t.Errorf("Model() = %q, want the configured m", s.Model())
	}
	if want := "model list unavailable, using \"m\": endpoint: GET /v1/models: read body: the GET /v1/models answer is larger than the 16 MiB limit"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log)
	}
}

// TestHookRedirect checks that the runner's own requests to the server follow no redirect.
func TestHookRedirect(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/v1/models":
			http.Redirect(w, r, "/elsewhere/v1/models?token=s3cret", http.StatusTemporaryRedirect)
		case "/elsewhere/v1/models":
			followed.Store(true)
			io.WriteString(w, `{"object":"list","data":[{"id":"elsewhere"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	s, log, err := start(t, experiment.Server{Engine: "endpoint", Model: "m", URL: ts.URL, ReadyPath: "/health"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if followed.Load() || s.Model() != "m" {
		t.Errorf("the redirect was followed: model %q", s.Model())
	}
	if want := "307 Temporary Redirect, a redirect to " + ts.URL + "/elsewhere/v1/models?[redacted], which the runner does not follow"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log)
	}
}

// TestHookErrorWording checks how a Hook request words a failed answer and a failed
// connection: the engine, the request, the status line and the start of the body on one line,
// with the answer's *openai.HTTPError still there for a preset to read its status.
func TestHookErrorWording(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "  still running\n  2 requests ")
	}))
	h := &Hook{Engine: "sglang", BaseURL: ts.URL, api: &openai.Client{BaseURL: ts.URL, HTTP: ts.Client()}}
	_, err := h.Post(context.Background(), "/flush_cache", nil)
	if want := "sglang: POST /flush_cache: 400 Bad Request: still running 2 requests"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	var he *openai.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		t.Errorf("error %v does not unwrap to a 400 *openai.HTTPError", err)
	}
	ts.Close()
	_, err = h.Get(context.Background(), "/version")
	if want := "sglang: GET /version: Get \"" + ts.URL + "/version\": "; err == nil || !strings.HasPrefix(err.Error(), want) || errors.As(err, &he) {
		t.Errorf("error %v, want a connection error starting %q", err, want)
	}
}
