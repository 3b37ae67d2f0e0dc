package orchestrate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// No GPU exists where these tests run: testdata/nvidia-smi, a shell stand-in put first on the
// PATH, plays testdata/episodes.stream over and over: a second at full clocks, then 400 ms of
// power cap and thermal slowdown.

// simExperiment returns an experiment that boots the simulator (the test binary, see TestMain)
// for one config of 6 measured requests of 16 tokens, about 330 ms each.
func simExperiment(t *testing.T) (*experiment.Experiment, []experiment.Config) {
	t.Helper()
	src := `version: 1
name: gpu
server:
  engine: sim
  model: sim-model
request:
  api: completions
  prompt_tokens: 24
  max_tokens: 16
  ignore_eos: true
warmup: 0
repetitions: 6
cache: keep
`
	e, err := experiment.Parse(filepath.Join(t.TempDir(), "gpu.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return e, cfgs
}

func fakeNvidiaSMI(t *testing.T, mode string) (pidfile string) {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	pidfile = filepath.Join(t.TempDir(), "pid")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_SMI_STREAM", filepath.Join(dir, "episodes.stream"))
	t.Setenv("FAKE_SMI_LOOP", "1")
	t.Setenv("FAKE_SMI_MODE", mode)
	t.Setenv("FAKE_SMI_PIDFILE", pidfile)
	t.Setenv(simEnv, "1")
	return pidfile
}

// runGPU runs simExperiment into a new folder and returns the folder and the progress output.
func runGPU(t *testing.T) (string, string) {
	t.Helper()
	e, cfgs := simExperiment(t)
	f, err := results.Create(t.TempDir(), e, cfgs, results.RunInfo{RunnerVersion: "test", Machine: &results.Machine{}})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{Experiment: e, Configs: cfgs, Logs: f.ServerLog, Executable: exe,
		Subscribers: []Subscriber{Record(f), NewProgress(&progress, false)}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	if out.Sent != 7 || out.Failed != 0 {
		t.Fatalf("outcome %+v\n%s", out, progress.String())
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	return f.Dir(), progress.String()
}

// alive reports whether the process in pidfile still runs (a zombie does not).
func alive(t *testing.T, pidfile string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the fake nvidia-smi never ran: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return pid, false
	}
	i := bytes.LastIndexByte(stat, ')')
	return pid, i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// TestRunGPUTelemetry boots a server with a GPU that throttles now and then: telemetry.csv
// is written, each request's GPU cells agree with the samples over its span, the episodes land
// on some measured requests and not on others, the summary warns, and nvidia-smi is gone once
// the server is.
func TestRunGPUTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a server and runs for a few seconds")
	}
	pidfile := fakeNvidiaSMI(t, "ok")
	dir, progress := runGPU(t)
	if pid, ok := alive(t, pidfile); ok {
		t.Errorf("nvidia-smi (pid %d) outlived its server", pid)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := r.Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 10 {
		t.Fatalf("telemetry.csv has %d samples", len(samples))
	}
	reqs, err := r.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var throttled, full int
	for _, q := range reqs {
		id := results.RequestID(q.ConfigID, q.Seq)
		if q.GPUThrottled == nil || q.GPUSMClockMeanMHz == nil || q.GPUTempMaxC == nil {
			t.Errorf("%s has no GPU cells", id)
			continue
		}
		// Independently of the join: the samples taken during the request, and the one in
		// force when it began.
		end := q.Start.Add(*q.E2E)
		want, before := false, -1
		for i, s := range samples {
			if !s.Time.After(q.Start) {
				before = i
			} else if !s.Time.After(end) && s.PowerOrThermal() {
				want = true
			}
		}
		if before >= 0 && samples[before].PowerOrThermal() {
			want = true
		}
		if *q.GPUThrottled != want {
			t.Errorf("%s (%s to %s) throttled %v, the samples say %v", id, q.Start.Format("15:04:05.000"), end.Format("15:04:05.000"), *q.GPUThrottled, want)
		}
		if c := *q.GPUSMClockMeanMHz; c < 1410 || c > 1980 || (!want && c != 1980) {
			t.Errorf("%s mean SM clock %v MHz", id, c)
		}
		if q.Phase == record.PhaseMeasure {
			if want {
				throttled++
			} else {
				full++
			}
		}
	}
	if throttled == 0 || full == 0 {
		t.Errorf("%d measured requests throttled and %d at full clocks, want some of each", throttled, full)
	}
	summary, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	warn := fmt.Sprintf("%d of %d measured requests overlapped GPU power or thermal throttling", throttled, throttled+full)
	if len(summary) == 0 || !strings.Contains(strings.Join(summary[0].Warnings, "\n"), warn) {
		t.Errorf("summary warnings %q lack %q", summary[0].Warnings, warn)
	}
	if strings.Contains(progress, "GPU telemetry") {
		t.Errorf("a working sampler warned:\n%s", progress)
	}
	files, err := results.ReadSchema(dir)
	if err != nil || files[len(files)-1].File != results.TelemetryFile {
		t.Errorf("datapackage.json lacks telemetry.csv (%v)", err)
	}
}

// TestRunGPUTelemetryBroken runs with a nvidia-smi that fails mid-run, and with one that never
// answers: every request keeps its row, the GPU cells are empty where no sample describes the
// request, and there is one warning, in the progress output and in the manifest.
func TestRunGPUTelemetryBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a server and runs for a few seconds")
	}
	for _, tc := range []struct{ mode, want string }{
		{"exit", "nvidia-smi exited (status 15) after 3 samples"},
		{"hang", "nvidia-smi gave no sample for"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			pidfile := fakeNvidiaSMI(t, tc.mode)
			dir, progress := runGPU(t)
			if pid, ok := alive(t, pidfile); ok {
				t.Errorf("nvidia-smi (pid %d) outlived its server", pid)
			}
			if n := strings.Count(progress, "GPU telemetry: "); n != 1 || !strings.Contains(progress, tc.want) {
				t.Errorf("progress has %d telemetry warnings, want one with %q:\n%s", n, tc.want, progress)
			}
			r, err := results.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if s := r.Manifest().Servers; len(s) != 1 || !strings.Contains(s[0].TelemetryWarning, tc.want) {
				t.Errorf("manifest servers %+v lack the warning", s)
			}
			reqs, err := r.Requests()
			if err != nil {
				t.Fatal(err)
			}
			empty := 0
			for _, q := range reqs {
				if q.Status != record.StatusOK {
					t.Errorf("%s-%d failed: %s", q.ConfigID, q.Seq, q.Error)
				}
				if q.GPUThrottled == nil {
					empty++
				}
			}
			if len(reqs) != 7 || empty == 0 {
				t.Errorf("%d rows, %d with empty GPU cells", len(reqs), empty)
			}
		})
	}
}
