package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// faultCase is one row of the fault matrix: a server that misbehaves in one way, and what the
// runner must make of it.
type faultCase struct {
	name string
	// Either sim, the simulator's arguments (engine: sim), or serve, the handler of the
	// completions route of a server written here (engine: endpoint).
	sim   string
	serve http.HandlerFunc
	// want is the error class of every row; "" means the rows succeed. first, when set, is the
	// class of the first row instead, for faults whose first request changes what follows.
	want, first record.ErrorClass
	timeout     string // timeouts.request; default 10s
}

// The fault matrix runs the runner end to end, as a user does (the built binary, a result
// folder on disk), against every way a server can misbehave that the runner knows of. For each
// case it checks the error class of every row, that the folder holds exactly the planned rows,
// that runner summary reads it, and that no process is left.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	const reps = 2
	cases := []faultCase{
		// The simulator's faults, in a real child process.
		{name: "sim mid-stream hang", sim: `"--fault", "hang@3"`, want: record.ErrTimeout, timeout: "1s"},
		{name: "sim abort", sim: `"--fault", "abort@3"`, want: record.ErrTruncated},
		{name: "sim clean truncation", sim: `"--fault", "truncate@3"`, want: record.ErrTruncated},
		{name: "sim in-band error", sim: `"--fault", "error@3"`, want: record.ErrStreamError},
		{name: "sim in-band error then EOF", sim: `"--fault", "error-eof@3"`, want: record.ErrStreamError},
		{name: "sim malformed event", sim: `"--fault", "malformed@3"`, want: record.ErrDecode},
		{name: "sim status 503", sim: `"--fault", "status=503"`, want: record.ErrHTTPStatus},
		{name: "sim status 500", sim: `"--fault", "status=500"`, want: record.ErrHTTPStatus},
		{name: "sim refuses return_token_ids", sim: `"--fault", "refuse=return_token_ids"`, want: ""},
		{name: "sim ignores continuous_usage_stats", sim: `"--fault", "ignore=continuous_usage_stats"`, want: ""},
		{name: "sim crash", sim: `"--fault", "crash@3"`, first: record.ErrTruncated, want: record.ErrServer},
		{name: "sim boot failure", sim: `"--boot-fail", "kv-cache"`, want: record.ErrServer},

		// A server written here, measured as an endpoint.
		{name: "garbage", serve: sseHandler("this is not an event stream\r\n\x00\xff\n\n"), want: record.ErrTruncated},
		{name: "mid-stream close", serve: closeAfter(sseChunks(2)), want: record.ErrTruncated},
		{name: "huge line", serve: hugeLine, want: record.ErrEventTooLarge},
		// A [DONE] cut off only by the end of the body still ends the stream: everything was sent.
		{name: "no newline after [DONE]", serve: sseHandler(sseChunks(3) + "data: [DONE]"), want: ""},
		{name: "no newline, no [DONE]", serve: sseHandler(strings.TrimSuffix(sseChunks(3), "\n\n")), want: record.ErrTruncated},
		{name: "slow drip", serve: slowDrip, want: record.ErrTimeout, timeout: "1s"},
		{name: "html", serve: typed("text/html; charset=utf-8", "<!doctype html><html><body>Sign in</body></html>"), want: record.ErrNotStream},
		{name: "plain json, stream ignored", serve: typed("application/json", `{"id":"c","object":"text_completion","choices":[{"text":"hi","index":0}]}`), want: record.ErrNotStream},
		{name: "json error with 200", serve: typed("application/json", `{"error":{"message":"model not loaded","type":"BadRequestError","code":400}}`), want: record.ErrNotStream},
		{name: "ndjson", serve: typed("application/x-ndjson", `{"response":"hi","done":false}`+"\n"), want: record.ErrNotStream},
		{name: "redirect", serve: redirect, want: record.ErrRedirect},
		{name: "gzip", serve: gzipped, want: record.ErrEncoding},
		{name: "in-band error", serve: sseHandler(sseChunks(1) + `data: {"error":{"message":"out of memory","type":"InternalServerError","code":500}}` + "\n\ndata: [DONE]\n\n"), want: record.ErrStreamError},
		{name: "status 500", serve: status(500), want: record.ErrHTTPStatus},
		{name: "status 429", serve: status(429), want: record.ErrHTTPStatus},
		{name: "empty 200", serve: typed("text/event-stream", ""), want: record.ErrTruncated},
		{name: "no text", serve: sseHandler(`data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n"), want: record.ErrNoText},
		{name: "malformed event", serve: sseHandler(sseChunks(1) + "data: {\"choices\": [\n\ndata: [DONE]\n\n"), want: record.ErrDecode},
		{name: "well behaved", serve: sseHandler(sseChunks(3) + "data: [DONE]\n\n"), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := fmt.Sprintf("fault-model-%d", time.Now().UnixNano())
			timeout := tc.timeout
			if timeout == "" {
				timeout = "10s"
			}
			var server string
			if tc.serve != nil {
				ts := httptest.NewServer(faultServer(marker, tc.serve))
				defer ts.Close()
				server = fmt.Sprintf("  engine: endpoint\n  url: %s\n  model: %s\n", ts.URL, marker)
			} else {
				server = fmt.Sprintf("  engine: sim\n  model: %s\n  args: [%s]\n", marker, tc.sim)
			}
			file := writeExperiment(t, dir, "faults", fmt.Sprintf(`
version: 1
name: faults
server:
%srequest:
  prompt: hello there
  max_tokens: 8
  ignore_eos: true
warmup: 0
repetitions: %d
cache: keep
timeouts:
  request: %s
`, server, reps, timeout))
			root := filepath.Join(dir, "results")
			code, stdout, stderr := runBinary(t, bin, file, "--results", root, "--quiet")
			wantCode := 1
			if tc.want == "" {
				wantCode = 0
			}
			if code != wantCode {
				t.Errorf("exit %d, want %d\n%s\n%s", code, wantCode, stdout, stderr)
			}
			checkNoSurvivors(t, marker)
			folder := onlyFolder(t, root, "faults")
			reqs := readRequests(t, folder)
			if len(reqs) != 1+reps {
				t.Fatalf("%d rows, want the plan's %d", len(reqs), 1+reps)
			}
			for i, q := range reqs {
				want := tc.want
				if i == 0 && tc.first != "" {
					want = tc.first
				}
				if q.ErrorClass != want || (want == "") != (q.Status == record.StatusOK) {
					t.Errorf("row %d: %s, class %q (%s), want class %q", i, q.Status, q.ErrorClass, q.Error, want)
				}
			}
			if code, out, errout := runBinary(t, bin, "summary", folder); code != 0 || !strings.Contains(out, "experiment faults") {
				t.Errorf("summary: exit %d\n%s\n%s", code, out, errout)
			}
		})
	}
}

// faultServer is an OpenAI-compatible server that lists model and answers completions with
// completions.
func faultServer(model string, completions http.HandlerFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"test"}]}`, model)
	})
	mux.HandleFunc("/v1/completions", completions)
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>sign in</html>") })
	return mux
}

// sseChunks returns n completion chunks of one word each, as an event stream.
func sseChunks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" w%d\",\"finish_reason\":null}]}\n\n", i)
	}
	return b.String()
}

// sseHandler answers with body as an event stream.
func sseHandler(body string) http.HandlerFunc { return typed("text/event-stream", body) }

// typed answers 200 with body and the given Content-Type.
func typed(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}
}

// closeAfter sends body as an event stream, then cuts the connection without ending the
// response.
func closeAfter(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// hugeLine sends one data line that never ends, past the runner's limit on an event.
func hugeLine(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, sseChunks(1)+"data: ")
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 24 { // 24 MiB, past the 16 MiB limit
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// slowDrip sends a valid stream one byte every 20 ms, far slower than the request may take.
func slowDrip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	body := sseChunks(50) + "data: [DONE]\n\n"
	for i := range len(body) {
		if _, err := w.Write([]byte{body[i]}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// redirect sends the request elsewhere, as a proxy in front of a login page would.
func redirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/login?next=/v1/completions", http.StatusFound)
}

// gzipped answers with a gzip-compressed event stream that the runner did not ask for.
func gzipped(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	fmt.Fprint(zw, sseChunks(3)+"data: [DONE]\n\n")
	zw.Close()
}

// status answers with an HTTP error status and an OpenAI error body.
func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"status %d","type":"Error","code":%d}}`, code, code)
	}
}
