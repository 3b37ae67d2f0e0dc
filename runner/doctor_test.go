package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/engine/enginetest"
	"github.com/onelayerdown/runner/runner/internal/gguf"
)

// doctorReport is the JSON report of runner doctor, as far as the tests read it.
type doctorReport struct {
	Servers []struct {
		Engine string `json:"engine"`
		Checks []struct {
			Check   string `json:"check"`
			Result  string `json:"result"`
			Detail  string `json:"detail"`
			Without string `json:"without"`
		} `json:"checks"`
	} `json:"servers"`
	Failed bool `json:"failed"`
}

// readDoctorJSON reads the report runner doctor wrote with --json.
func readDoctorJSON(t *testing.T, path string) doctorReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r doctorReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	if len(r.Servers) != 1 {
		t.Fatalf("%d servers in the report, want 1\n%s", len(r.Servers), b)
	}
	return r
}

// TestDoctorCommand runs runner doctor as a user does, booting the simulator: a healthy one exits
// 0 with every check ok, one whose reset keeps the cache exits 1 under cache: reset, and a usage
// error exits 2. No server outlives the command.
func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	cases := []struct {
		name, args string
		code       int
		failed     string // the one check that does not pass, "" for none
	}{
		{name: "healthy", code: 0},
		{name: "reset keeps the cache", args: `"--fault", "reset-noop"`, code: 1, failed: "cache reset"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := fmt.Sprintf("doctor-model-%d", time.Now().UnixNano())
			file := writeExperiment(t, dir, "doctor", fmt.Sprintf(`
version: 1
name: doctor
server:
  engine: sim
  model: %s
  max_model_len: 1024
  args: [%s]
request:
  prompt: hello there
  max_tokens: 8
  ignore_eos: true
cache: reset
`, marker, tc.args))
			js := filepath.Join(dir, "doctor.json")
			code, stdout, stderr := runBinary(t, bin, "doctor", file, "--json", js, "--no-telemetry")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			checkNoSurvivors(t, marker)
			r := readDoctorJSON(t, js)
			var notOK []string
			for _, c := range r.Servers[0].Checks {
				if c.Result != "ok" {
					notOK = append(notOK, c.Check)
				}
				if !strings.Contains(stdout, c.Check) {
					t.Errorf("the table has no row for %s:\n%s", c.Check, stdout)
				}
			}
			if strings.Join(notOK, ",") != tc.failed || r.Failed != (tc.code == 1) {
				t.Errorf("checks not ok %q, failed %v; want %q\n%s", notOK, r.Failed, tc.failed, stdout)
			}
		})
	}
	for _, args := range [][]string{{"doctor"}, {"doctor", "a.yaml", "b.yaml"}, {"doctor", "--format", "xml", "x.yaml"}} {
		if code, _, stderr := runBinary(t, bin, args...); code != 2 || !strings.Contains(stderr, "runner: doctor: ") {
			t.Errorf("%q: exit %d, want 2 with the command named\n%s", args, code, stderr)
		}
	}
}

// TestCPUEngineDoctor runs runner doctor against the real CPU engine, ollama serving the tiny
// generated model: it boots and streams, reports its version, and, since ollama serves no
// /metrics, cannot prove its cache reset; a run of cpu-demo's cache: reset still may go ahead.
func TestCPUEngineDoctor(t *testing.T) {
	t.Parallel()
	enginetest.Require(t, engine.FindOllama)
	bin := buildRunner(t)
	work := t.TempDir()
	model := filepath.Join(work, "tiny.gguf")
	if err := gguf.WriteTinyLlamaFile(model, gguf.DefaultParams()); err != nil {
		t.Fatal(err)
	}
	file := writeExperiment(t, work, "doctor-cpu", fmt.Sprintf(`
version: 1
name: doctor-cpu
server:
  engine: ollama
  model: %s
  max_model_len: 2048
  ready_timeout: 2m
request:
  api: completions
  prompt_tokens: 64
  max_tokens: 8
  ignore_eos: true
  temperature: 0
  seed: 1
cache: reset
timeouts:
  request: 2m
`, model))
	js := filepath.Join(work, "doctor.json")
	marker := "RUNNER_TEST_RUN=doctor-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	code, stdout, stderr := runIn(t, work, bin, []string{"doctor", file, "--json", js}, marker)
	t.Logf("runner doctor said (exit %d):\n%s", code, stdout)
	checkNoSurvivors(t, marker)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, stderr)
	}
	r := readDoctorJSON(t, js)
	results := map[string]string{}
	for _, c := range r.Servers[0].Checks {
		results[c.Check] = c.Result
	}
	for check, want := range map[string]string{"readiness": "ok", "version": "ok", "streaming": "ok",
		"metric names": "skipped", "ttft histogram": "skipped", "cache reset": "unverified"} {
		if results[check] != want {
			t.Errorf("%s: %s, want %s", check, results[check], want)
		}
	}
}
