package sim

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	cases := []struct {
		spec string
		want []Fault
		err  string
	}{
		{"", nil, ""},
		{"crash", []Fault{{Kind: FaultCrash, At: defaultFaultAt}}, ""},
		{"hang@0", []Fault{{Kind: FaultHang, At: 0}}, ""},
		{" Error@5 , status=503", []Fault{{Kind: FaultError, At: 5}, {Kind: FaultStatus, At: defaultFaultAt, Arg: "503"}}, ""},
		{"refuse=return_token_ids,ignore=continuous_usage_stats", []Fault{
			{Kind: FaultRefuse, At: defaultFaultAt, Arg: "return_token_ids"},
			{Kind: FaultIgnore, At: defaultFaultAt, Arg: "continuous_usage_stats"}}, ""},
		{"explode", nil, "unknown fault"},
		{"hang@-1", nil, "non-negative"},
		{"hang@x", nil, "non-negative"},
		{"status=200", nil, "400-599"},
		{"status", nil, "400-599"},
		{"refuse", nil, "needs an option"},
		{"crash=1", nil, "no =argument"},
		{"status=500@2", nil, "400-599"},
		{"refuse@2=x", nil, "takes no event index"},
	}
	for _, tc := range cases {
		got, err := ParseFaults(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseFaults(%q) error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseFaults(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
		if again, err := ParseFaults(FormatFaults(got)); err != nil || !slices.Equal(again, got) {
			t.Errorf("ParseFaults(FormatFaults(%v)) = %v, %v", got, again, err)
		}
	}
}

const streamBody = `{"prompt":"the","max_tokens":6,"stream":true}`

// TestFaultAbortAndCrash checks the faults that cut the connection: the client reads some events
// and then an error, never [DONE]. An in-process crash also kills the server.
func TestFaultAbortAndCrash(t *testing.T) {
	for _, kind := range []string{"abort@2", "crash@2"} {
		t.Run(kind, func(t *testing.T) {
			var crashed atomic.Int32
			s, ts := startServer(t, func(c *Config) { c.Crash = func() { crashed.Add(1) } })
			_, body, err := post(t, ts, "/v1/completions", streamBody, map[string]string{"X-Sim-Fault": kind})
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("reading the body: %v, want unexpected EOF", err)
			}
			if n := strings.Count(string(body), "data: "); n != 2 || strings.Contains(string(body), "[DONE]") {
				t.Errorf("got %d events before the cut, want 2 and no [DONE]: %q", n, body)
			}
			resp, _ := get(t, ts, "/health")
			if kind == "crash@2" {
				if crashed.Load() != 1 || !s.Dead() || resp.StatusCode != 503 {
					t.Errorf("after crash: hook called %d times, dead %v, /health %d; want 1, true, 503", crashed.Load(), s.Dead(), resp.StatusCode)
				}
				resp, b, _ := post(t, ts, "/v1/completions", `{"prompt":"the","max_tokens":1}`, nil)
				if resp.StatusCode != 500 || !strings.Contains(string(b), "InternalServerError") {
					t.Errorf("request after crash: HTTP %d %s, want 500", resp.StatusCode, b)
				}
			} else if resp.StatusCode != 200 || s.Dead() {
				t.Errorf("after abort: /health %d, dead %v", resp.StatusCode, s.Dead())
			}
		})
	}
}

// TestFaultHang checks that a hang sends the events before it, then nothing, keeps the request
// in flight, and ends when the client leaves or the server closes.
func TestFaultHang(t *testing.T) {
	s, ts := startServer(t, nil)
	read := func(ctx context.Context) (*bufio.Reader, *http.Response) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(streamBody))
		req.Header.Set("X-Sim-Fault", "hang@3")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for i := range 3 {
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "data: {") {
				t.Fatalf("event %d: %q %v", i, line, err)
			}
			br.ReadString('\n') // the blank separator line
		}
		return br, resp
	}

	ctx, cancel := context.WithCancel(context.Background())
	br, resp := read(ctx)
	more := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		more <- line
	}()
	select {
	case line := <-more:
		t.Fatalf("got %q after the hang point", line)
	case <-time.After(50 * time.Millisecond):
	}
	if s.running.Load() != 1 {
		t.Errorf("running %d during the hang, want 1", s.running.Load())
	}
	cancel()
	resp.Body.Close()
	waitFor(t, func() bool { return s.running.Load() == 0 }, "the hung request to end after the client left")

	br, resp = read(context.Background())
	defer resp.Body.Close()
	s.Close()
	if _, err := io.ReadAll(br); err == nil {
		t.Errorf("after Close the hung stream ended cleanly, want a cut connection")
	}
}

// TestFaultsAtIndex checks which event each stream fault replaces, for both APIs, with the
// fault set for the whole server.
func TestFaultsAtIndex(t *testing.T) {
	cases := []struct {
		fault      string
		chat       bool
		wantEvents int // data events received, [DONE] included
		wantDone   bool
		wantError  bool // an in-band error event
		wantBadAt  int  // index of an event that is not JSON, or -1
	}{
		{"truncate@0", false, 0, false, false, -1},
		{"truncate@4", false, 4, false, false, -1},
		{"truncate@6", false, 6, false, false, -1}, // all six text events, then no [DONE]
		{"error@0", true, 2, true, true, -1},
		{"error@1", true, 3, true, true, -1},
		{"error-eof@4", false, 5, false, true, -1},
		{"malformed@0", false, 7, true, false, 0},
		{"malformed@6", true, 8, true, false, 6},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			faults, err := ParseFaults(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			_, ts := startServer(t, func(c *Config) { c.Faults = faults })
			path, body := "/v1/completions", streamBody
			if tc.chat {
				path, body = "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}`
			}
			resp, b, err := post(t, ts, path, body, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("HTTP %d, %v", resp.StatusCode, err)
			}
			evs := dataEvents(t, b)
			if len(evs) != tc.wantEvents {
				t.Errorf("%d events, want %d: %q", len(evs), tc.wantEvents, b)
			}
			done := len(evs) > 0 && evs[len(evs)-1] == "[DONE]"
			if done != tc.wantDone {
				t.Errorf("[DONE] at the end: %v, want %v", done, tc.wantDone)
			}
			gotError, badAt := false, -1
			for i, e := range evs {
				if e == "[DONE]" {
					continue
				}
				var c chunk
				if jsonUnmarshal([]byte(e), &c) != nil {
					badAt = i
					continue
				}
				if c.Error != nil {
					gotError = true
					// The default nested shape of vLLM 0.10.1 and later, written by json.dumps.
					if !strings.HasPrefix(e, `{"error": {"message": `) {
						t.Errorf("error event is not vLLM's json.dumps shape: %s", e)
					}
				}
			}
			if gotError != tc.wantError || badAt != tc.wantBadAt {
				t.Errorf("error event %v (want %v), malformed event at %d (want %d)", gotError, tc.wantError, badAt, tc.wantBadAt)
			}
		})
	}
}

// TestFaultsNonStreamed checks faults on a non-streamed request, where they hit the one body.
func TestFaultsNonStreamed(t *testing.T) {
	body := `{"prompt":"the","max_tokens":4}`
	cases := []struct {
		fault   string
		status  int
		readErr bool
		valid   bool // the body is JSON
	}{
		{"", 200, false, true},
		{"error@5", 500, false, true},
		{"malformed", 200, false, false},
		{"truncate", 200, true, false},
		{"abort", 0, true, false},
		{"status=429", 429, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			_, ts := startServer(t, nil)
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(body))
			req.Header.Set("X-Sim-Fault", tc.fault)
			resp, err := http.DefaultClient.Do(req)
			if tc.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("abort before the response: got HTTP %d, want a transport error", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || (err != nil) != tc.readErr {
				t.Errorf("HTTP %d, read error %v; want %d, error %v", resp.StatusCode, err, tc.status, tc.readErr)
			}
			var v map[string]any
			if valid := jsonUnmarshal(b, &v) == nil; valid != tc.valid {
				t.Errorf("body is JSON: %v, want %v: %s", valid, tc.valid, b)
			}
		})
	}
}

// TestFaultRefuseIgnore checks the option faults, which let a client's degradation be tested.
func TestFaultRefuseIgnore(t *testing.T) {
	_, ts := startServer(t, nil)
	withIDs := `{"prompt":"the","max_tokens":3,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`
	resp, b, _ := post(t, ts, "/v1/completions", withIDs, map[string]string{"X-Sim-Fault": "refuse=return_token_ids"})
	if resp.StatusCode != 400 || !strings.Contains(string(b), "return_token_ids") {
		t.Errorf("refuse: HTTP %d %s", resp.StatusCode, b)
	}
	resp, _, _ = post(t, ts, "/v1/completions", streamBody, map[string]string{"X-Sim-Fault": "refuse=return_token_ids"})
	if resp.StatusCode != 200 {
		t.Errorf("refuse of an option the request does not use: HTTP %d", resp.StatusCode)
	}
	resp, b, _ = post(t, ts, "/v1/completions", withIDs, map[string]string{"X-Sim-Fault": "refuse=continuous_usage_stats"})
	if resp.StatusCode != 400 {
		t.Errorf("refuse of a stream option: HTTP %d %s", resp.StatusCode, b)
	}

	_, b, _ = post(t, ts, "/v1/completions", withIDs, map[string]string{"X-Sim-Fault": "ignore=return_token_ids,ignore=continuous_usage_stats"})
	cs, done := chunks(t, b)
	if !done || len(cs) != 4 {
		t.Fatalf("ignore: %d chunks, done %v: %s", len(cs), done, b)
	}
	for i, c := range cs[:3] {
		if c.Usage != nil || c.Choices[0].TokenIDs != nil {
			t.Errorf("chunk %d still has usage or token ids with both ignored: %+v", i, c)
		}
	}
	if cs[3].Usage == nil || cs[3].Usage.CompletionTokens != 3 {
		t.Errorf("include_usage was not ignored, the final usage chunk should stay: %+v", cs[3])
	}
}

func TestFaultStatus(t *testing.T) {
	_, ts := startServer(t, nil) // the default shape is the nested one
	for code, typ := range map[string]string{"500": "InternalServerError", "503": "ServiceUnavailableError", "429": "TooManyRequestsError"} {
		resp, b, _ := post(t, ts, "/v1/completions", streamBody, map[string]string{"X-Sim-Fault": "status=" + code})
		if resp.Status[:3] != code || !strings.HasPrefix(string(b), `{"error":{"message":`) || !strings.Contains(string(b), `"type":"`+typ+`"`) {
			t.Errorf("status=%s: %s %s", code, resp.Status, b)
		}
	}
}

// TestServerFaults checks the server-wide faults that take an endpoint or a metric away: a
// hidden metric family is gone from /metrics whole, a frozen histogram stays on it but counts
// no request, a removed route answers 404, and a prompt-only /tokenize refuses messages.
func TestServerFaults(t *testing.T) {
	faults, err := ParseFaults("hide-metric=vllm:request_queue_time_seconds,hide-metric=vllm:prompt_tokens_total," +
		"freeze-metric=vllm:time_to_first_token_seconds,no-route=/version,tokenize-prompt-only")
	if err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, func(c *Config) { c.Faults = faults })
	if _, _, err := post(t, ts, "/v1/completions", streamBody, nil); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, ts, "/metrics")
	for _, gone := range []string{"vllm:request_queue_time_seconds", "vllm:prompt_tokens_total"} {
		if strings.Contains(string(page), gone) {
			t.Errorf("/metrics still serves %s", gone)
		}
	}
	if !strings.Contains(string(page), "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"sim/golden\"} 1.0\n") {
		t.Errorf("/metrics lost the e2e histogram or did not count the request")
	}
	if !strings.Contains(string(page), "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"sim/golden\"} 0.0\n") {
		t.Errorf("the frozen TTFT histogram moved or is gone")
	}
	if resp, _ := get(t, ts, "/version"); resp.StatusCode != 404 {
		t.Errorf("/version: %d, want 404", resp.StatusCode)
	}
	if resp, _, _ := post(t, ts, "/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode != 400 {
		t.Errorf("/tokenize with messages: %d, want 400", resp.StatusCode)
	}
	if resp, _, _ := post(t, ts, "/tokenize", `{"prompt":"hi"}`, nil); resp.StatusCode != 200 {
		t.Errorf("/tokenize with a prompt: %d, want 200", resp.StatusCode)
	}
	for _, bad := range []string{"hide-metric", "freeze-metric", "no-route=tokenize", "tokenize-prompt-only=x"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q): no error", bad)
		}
	}
}
