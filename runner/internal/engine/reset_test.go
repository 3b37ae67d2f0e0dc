package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/openai"
)

// TestResetWhenIdle: vLLM's /reset_prefix_cache answers 200 even when the engine declines to
// reset because requests still run (vllm/v1/core/sched/scheduler.py, reset_prefix_cache, 0.8 to
// 0.11), so the reset waits until /metrics shows no request running or waiting; a server
// without those gauges is reset at once, and one that stays busy is an error.
func TestResetWhenIdle(t *testing.T) {
	defer func(w, p time.Duration) { idleWait, idlePoll = w, p }(idleWait, idlePoll)
	idleWait, idlePoll = 300*time.Millisecond, time.Millisecond
	for _, tc := range []struct {
		name      string
		busyPolls int // scrapes that show a running request
		gauges    bool
		wantErr   bool
	}{
		{"idle", 0, true, false},
		{"a timed-out request still generating", 3, true, false},
		{"no gauges", 0, false, false},
		{"stays busy", 1 << 30, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			scrapes := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				switch r.URL.Path {
				case "/metrics":
					if !tc.gauges {
						fmt.Fprintln(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.0")
						return
					}
					running := 0
					if scrapes < tc.busyPolls {
						running = 1
					}
					scrapes++
					fmt.Fprintf(w, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} %d.0\nvllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0.0\n", running)
					seen = append(seen, fmt.Sprintf("metrics %d", running))
				case "/reset_prefix_cache":
					seen = append(seen, "reset")
				}
			}))
			defer srv.Close()
			err := resetWhenIdle("/reset_prefix_cache")(context.Background(), &Hook{Engine: "vllm", BaseURL: srv.URL, api: &openai.Client{BaseURL: srv.URL, HTTP: srv.Client()}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("reset: %v, want error %v", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			last := ""
			if len(seen) > 0 {
				last = seen[len(seen)-1]
			}
			switch {
			case tc.wantErr && strings.Contains(strings.Join(seen, ","), "reset"):
				t.Errorf("reset sent to a busy server: %v", seen)
			case !tc.wantErr && last != "reset":
				t.Errorf("requests %v, want the reset last", seen)
			case !tc.wantErr && tc.gauges && len(seen) != tc.busyPolls+2:
				t.Errorf("requests %v, want %d scrapes then the reset", seen, tc.busyPolls+1)
			}
		})
	}
}

// TestSGLangResetRetries400: SGLang's /flush_cache answers 400 while requests run or wait
// (http_server.py, flush_cache), which includes the warm-up request of releases whose /health
// answers 200 before it is done; the reset tries again rather than concluding that the server
// cannot reset, and gives up only after sglangFlushWait.
func TestSGLangResetRetries400(t *testing.T) {
	defer func(w, p time.Duration) { sglangFlushWait, idlePoll = w, p }(sglangFlushWait, idlePoll)
	sglangFlushWait, idlePoll = 200*time.Millisecond, time.Millisecond
	for _, tc := range []struct {
		name    string
		refuse  int // answers 400 this many times
		status  int // then this
		wantErr bool
		wantN   int // requests, or 0 for at least 2
	}{
		{"warm-up then flushed", 3, 200, false, 4},
		{"always busy", 1 << 30, 200, true, 0},
		{"not found is final", 0, 404, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				if n <= tc.refuse {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n")
					return
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			err := sglangReset(context.Background(), &Hook{Engine: "sglang", BaseURL: srv.URL, api: &openai.Client{BaseURL: srv.URL, HTTP: srv.Client()}})
			if (err != nil) != tc.wantErr || (tc.wantN > 0 && n != tc.wantN) || (tc.wantN == 0 && n < 2) {
				t.Errorf("reset: %v after %d requests", err, n)
			}
		})
	}
}

// TestPythonThree: a preset that launches python passes the preflight on a PATH that has only
// python3, as many images do.
func TestPythonThree(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := experiment.Server{Engine: "sglang", Model: "m", Env: map[string]string{"PATH": dir}}
	if err := Preflight(srv, "runner"); err != nil {
		t.Errorf("preflight with python3 only: %v", err)
	}
	srv.Env["PATH"] = t.TempDir()
	if err := Preflight(srv, "runner"); err == nil {
		t.Error("preflight passed with neither python nor python3")
	}
}

// TestExitZeroHint: an entrypoint that exits at once with status 0 is named; vLLM's deprecated
// api_server module gets the advice to use vllm serve.
func TestExitZeroHint(t *testing.T) {
	if h := exitZeroHint("vllm", []string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}); !strings.Contains(h, "remove server.entrypoint") {
		t.Errorf("api_server hint %q", h)
	}
	if h := exitZeroHint("command", []string{"srv", "--help"}); !strings.Contains(h, "status 0") {
		t.Errorf("generic hint %q", h)
	}
}

// TestBusyEndpointResetProblem: an endpoint that offers the reset but never becomes idle is
// not one that "offers none": the server says what the reset waited for, and for how long.
func TestBusyEndpointResetProblem(t *testing.T) {
	defer func(w, p time.Duration) { idleWait, idlePoll = w, p }(idleWait, idlePoll)
	idleWait, idlePoll = 300*time.Millisecond, time.Millisecond
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m"}]}`)
		case "/metrics":
			fmt.Fprintln(w, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2.0\nvllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0")
		case "/reset_prefix_cache":
			t.Errorf("reset sent to a busy server")
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	s, err := Start(context.Background(), experiment.Server{Engine: "endpoint", URL: ts.URL}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if s.CanResetCache() {
		t.Fatal("a server that never became idle is taken to have reset its cache")
	}
	var busy *BusyError
	if err := s.CacheResetProblem(); !errors.As(err, &busy) || busy.Requests != 3 || busy.Waited != idleWait {
		t.Fatalf("reset problem %v, want a BusyError of 3 requests after %s", err, idleWait)
	}
	if got, want := s.CacheResetProblem().Error(), "the server still ran or queued 3 requests after 300ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
