package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// startSim serves the simulator in process with the server-wide faults spec, and returns its
// URL. devMode offers the prefix cache reset.
func startSim(t *testing.T, faults string, devMode bool) string {
	t.Helper()
	c := sim.DefaultConfig()
	c.Model, c.DevMode, c.MaxModelLen = "sim-model", devMode, 1024
	fs, err := sim.ParseFaults(faults)
	if err != nil {
		t.Fatal(err)
	}
	c.Faults = fs
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts.URL
}

// configsFor is one config of an endpoint server at url, with the cache handled as cache says
// and server.max_model_len set to maxLen.
func configsFor(url, cache string, maxLen int) []experiment.Config {
	yes := true
	return []experiment.Config{{
		ID: "c1", ServerID: "s1", Cache: cache,
		Server: experiment.Server{Engine: "endpoint", URL: url, Model: "sim-model", MaxModelLen: maxLen,
			ReadyTimeout: 30 * time.Second},
		Request: experiment.Request{API: "completions", MaxTokens: 8, IgnoreEOS: &yes},
	}}
}

// doctorRun runs the checks of cfgs, without GPU telemetry.
func doctorRun(t *testing.T, cfgs []experiment.Config) *Report {
	t.Helper()
	r, err := Run(context.Background(), &experiment.Experiment{Name: "doctor-test"}, cfgs, Options{NoTelemetry: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 1 {
		t.Fatalf("%d servers in the report, want 1", len(r.Servers))
	}
	return r
}

// allChecks are the checks of a server that is ready, in the order they are reported.
var allChecks = []string{"readiness", "version", "max_model_len", "tokenize prompt", "tokenize bare text",
	"tokenize messages", "usage.prompt_tokens", "streaming", "continuous_usage_stats", "return_token_ids",
	"metric names", "ttft histogram", "cache reset"}

// TestDoctorSim runs the doctor against the simulator, healthy and with one fault at a time: a
// healthy one passes every check, and each fault makes exactly the checks it breaks fail, with
// the result, the words of what the runner will do without it, and the report's verdict.
func TestDoctorSim(t *testing.T) {
	t.Parallel()
	type want struct {
		result  Result
		without string // a part of the check's Without
	}
	cases := []struct {
		name, faults string
		noReset      bool   // the server offers no cache reset
		cache        string // the experiment's cache; reset unless set
		maxLen       int    // the experiment's max_model_len; the simulator's 1024 unless set
		want         map[string]want
		failed       bool
	}{
		{name: "healthy"},
		{name: "cache keep", cache: "keep"},
		{name: "no version", faults: "no-route=/version",
			want: map[string]want{"version": {Missing, "engine_version"}}},
		{name: "max_model_len differs", maxLen: 4096, failed: true,
			want: map[string]want{"max_model_len": {Failed, "checked against 4096 tokens but served within 1024"}}},
		{name: "no /tokenize", faults: "no-route=/tokenize", want: map[string]want{
			"tokenize prompt":    {Missing, "usage.prompt_tokens"},
			"tokenize bare text": {Missing, "counted from the stream alone"},
			"tokenize messages":  {Missing, "chat template's overhead"}}},
		{name: "no messages", faults: "tokenize-prompt-only",
			want: map[string]want{"tokenize messages": {Missing, "chat template's overhead"}}},
		{name: "no continuous usage", faults: "ignore=continuous_usage_stats",
			want: map[string]want{"continuous_usage_stats": {Missing, "from return_token_ids alone"}}},
		{name: "token ids refused", faults: "refuse=return_token_ids",
			want: map[string]want{"return_token_ids": {Missing, "from continuous_usage_stats alone"}}},
		{name: "no per-event counts", faults: "ignore=continuous_usage_stats,ignore=return_token_ids", want: map[string]want{
			"continuous_usage_stats": {Missing, "tpot_token divides by (output tokens − 1)"},
			"return_token_ids":       {Missing, "tpot_token divides by (output tokens − 1)"}}},
		{name: "streams fail", faults: "status=500", failed: true, want: map[string]want{
			"usage.prompt_tokens":    {Missing, "approximated by tiktoken"},
			"streaming":              {Failed, "every request fails"},
			"continuous_usage_stats": {Skipped, ""},
			"return_token_ids":       {Skipped, ""},
			"metric names":           {Skipped, ""},
			"ttft histogram":         {Skipped, ""},
			"cache reset":            {Skipped, ""}}},
		{name: "reset keeps the cache", faults: "reset-noop", failed: true,
			want: map[string]want{"cache reset": {Failed, "flagged cache_hit_after_reset"}}},
		{name: "reset keeps the cache, cache keep", faults: "reset-noop", cache: "keep",
			want: map[string]want{"cache reset": {Missing, "flagged cache_hit_after_reset"}}},
		{name: "no reset", noReset: true, failed: true,
			want: map[string]want{"cache reset": {Failed, "set cache: keep"}}},
		{name: "no reset, cache keep", noReset: true, cache: "keep",
			want: map[string]want{"cache reset": {Missing, "cannot be asked"}}},
		{name: "missing metric", faults: "hide-metric=vllm:request_queue_time_seconds",
			want: map[string]want{"metric names": {Missing, "server_queue_ms"}}},
		{name: "missing hits counter", faults: "hide-metric=vllm:prefix_cache_hits_total", want: map[string]want{
			"metric names": {Missing, "prefix_cache_hits"},
			"cache reset":  {Unverified, "not flagged"}}},
		{name: "frozen ttft histogram", faults: "freeze-metric=vllm:time_to_first_token_seconds",
			want: map[string]want{"ttft histogram": {Missing, "server_ttft_ms and client_overhead_ms stay empty"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cache, maxLen := tc.cache, tc.maxLen
			if cache == "" {
				cache = "reset"
			}
			if maxLen == 0 {
				maxLen = 1024
			}
			r := doctorRun(t, configsFor(startSim(t, tc.faults, !tc.noReset), cache, maxLen))
			got := map[string]Check{}
			var names []string
			for _, c := range r.Servers[0].Checks {
				got[c.Name] = c
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(allChecks, ",") {
				t.Errorf("checks %q, want %q", names, allChecks)
			}
			for _, name := range allChecks {
				c, w := got[name], tc.want[name]
				if w.result == "" {
					w.result = OK
				}
				if c.Result != w.result {
					t.Errorf("%s: %s (%s), want %s", name, c.Result, c.Detail, w.result)
				}
				if !strings.Contains(c.Without, w.without) || (w.result == OK && c.Without != "") {
					t.Errorf("%s: without it %q, want it to say %q", name, c.Without, w.without)
				}
			}
			if r.Failed() != tc.failed {
				t.Errorf("Failed() = %v, want %v", r.Failed(), tc.failed)
			}
		})
	}
}

// TestDoctorNotReady checks that a server that never becomes ready fails the readiness check,
// and that no other check is tried.
func TestDoctorNotReady(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing answers there now
	cfgs := configsFor(url, "keep", 0)
	cfgs[0].Server.ReadyTimeout = 500 * time.Millisecond
	r := doctorRun(t, cfgs)
	checks := r.Servers[0].Checks
	if len(checks) != 1 || checks[0].Name != "readiness" || checks[0].Result != Failed || !strings.Contains(checks[0].Without, "recorded failed") {
		t.Errorf("checks %+v, want one failed readiness check", checks)
	}
	if !r.Failed() {
		t.Error("Failed() = false for a server that never became ready")
	}
}

// TestDoctorEncoders checks the text table and the JSON object of a report: every check is a
// row, and the JSON reads back into the same report with its verdict.
func TestDoctorEncoders(t *testing.T) {
	r := &Report{Experiment: "e", Servers: []Server{{ID: "s1", Engine: "sim", Model: "m", Checks: []Check{
		{Name: "readiness", Result: OK, Detail: "ready"},
		{Name: "cache reset", Result: Failed, Detail: "kept\nthe cache", Without: "flags every request"},
	}}}}
	var text bytes.Buffer
	enc, err := NewEncoder("text", &text)
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"s1 (sim)  readiness", "failed  kept; the cache  flags every request", "something the experiment needs is missing"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := NewJSONEncoder(&js).Encode(r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Report
		Failed bool `json:"failed"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Failed || len(back.Servers) != 1 || len(back.Servers[0].Checks) != 2 || back.Servers[0].Checks[1].Without != "flags every request" || back.Machine == nil {
		t.Errorf("JSON read back as %+v\n%s", back, js.String())
	}
	if _, err := NewEncoder("csv", &js); err == nil || !strings.Contains(err.Error(), "want text, json") {
		t.Errorf("an unknown format: %v", err)
	}
}

// fakeSMI writes an executable nvidia-smi that answers the probe of the throttle-reason field
// with probe (a shell command) and the sampling query with sample, and returns its path.
func fakeSMI(t *testing.T, probe, sample string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nvidia-smi")
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=index,*) " + probe + " ;;\n*) " + sample + " ;;\nesac\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// sampleLoop prints a sample with the current time every 0.1 s, forever, as `nvidia-smi -lms
// 100` does; bad, when set, is printed first as a line that is not a sample.
func sampleLoop(bad string) string {
	s := `while :; do echo "$(date '+%Y/%m/%d %H:%M:%S').000, 0, 1980, 2619, 40, 70.5, 700.00, 0, 1, 0x0000000000000000"; sleep 0.1; done`
	if bad != "" {
		s = "echo '" + bad + "'; " + s
	}
	return s
}

// TestDoctorTelemetry checks the GPU telemetry checks against fake nvidia-smis: a healthy one
// passes them all, and each fault fails exactly its check.
func TestDoctorTelemetry(t *testing.T) {
	t.Parallel()
	probeOK := "echo '0, 0x0000000000000000'"
	cases := []struct {
		name, probe, sample string
		window              time.Duration // how long to watch; generous unless the samples never come
		want                map[string]Result
	}{
		{name: "healthy", probe: probeOK, sample: sampleLoop(""), window: time.Minute,
			want: map[string]Result{"throttle reasons": OK, "samples as taken": OK, "timestamps": OK}},
		{name: "no throttle field", probe: "echo 'Field \"x\" is not a valid field to query.'; exit 2", sample: sampleLoop(""), window: time.Minute,
			want: map[string]Result{"throttle reasons": Missing}},
		{name: "bad timestamp", probe: probeOK, sample: sampleLoop("yesterday, 0, 1980, 2619, 40, 70.5, 700.00, 0, 1, 0x0"), window: time.Minute,
			want: map[string]Result{"throttle reasons": OK, "samples as taken": OK, "timestamps": Missing}},
		// Output held back for longer than the watch: nothing arrives while it lasts.
		{name: "buffered", probe: probeOK, sample: "exec sleep 60", window: 2 * time.Second,
			want: map[string]Result{"throttle reasons": OK, "samples as taken": Missing, "timestamps": Skipped}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checks := checkTelemetry(context.Background(), Options{NvidiaSMI: fakeSMI(t, tc.probe, tc.sample), TelemetryWindow: tc.window})
			got := map[string]Result{}
			for _, c := range checks {
				got[c.Name] = c.Result
				if (c.Result == OK && c.Without != "") || (c.Result == Missing && c.Without == "") {
					t.Errorf("%s: %s with without-text %q", c.Name, c.Result, c.Without)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("checks %+v, want %v", checks, tc.want)
			}
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("%s: %s, want %s (%+v)", name, got[name], w, checks)
				}
			}
		})
	}
}

// TestDoctorTextShowsControlCharacters checks that what a check quotes of a server reaches the
// terminal with its control characters shown, not sent: a clear-screen in an error body must not
// clear the screen of the user reading the table.
func TestDoctorTextShowsControlCharacters(t *testing.T) {
	r := &Report{Experiment: "e", Servers: []Server{{ID: "s1", Engine: "endpoint", Checks: []Check{
		{Name: "streaming", Result: Failed, Detail: "HTTP 500: \x1b[2J\x1b]0;owned\x07", Without: "no request \x1b[31mmeasured"},
	}}}}
	var text bytes.Buffer
	if err := NewTextEncoder(&text).Encode(r); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(text.String(), "\x1b\x07") {
		t.Errorf("the table sends control characters to the terminal:\n%q", text.String())
	}
	if !strings.Contains(text.String(), `HTTP 500: \x1b[2J\x1b]0;owned\x07`) {
		t.Errorf("the table does not show the escaped body:\n%s", text.String())
	}
}
