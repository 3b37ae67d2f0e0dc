package telemetry

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// No GPU exists where these tests run: every sampler runs testdata/nvidia-smi, a shell stand-in
// put first on the PATH, which prints testdata/throttle.stream (a power cap and thermal
// slowdown from its fifth sample to its eighth) or misbehaves as FAKE_SMI_MODE says.

const helperEnv = "TELEMETRY_TEST_HELPER"

// TestMain lets the test binary act as a runner that starts a sampler and is then killed.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		s := Start(context.Background(), Options{ServerID: "helper"})
		if s == nil || s.PID() == 0 {
			os.Exit(3)
		}
		os.Stdout.WriteString("started\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakePATH puts the fake nvidia-smi first on the PATH and points it at the recorded stream.
func fakePATH(t *testing.T, mode string) {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_SMI_STREAM", filepath.Join(dir, "throttle.stream"))
	t.Setenv("FAKE_SMI_MODE", mode)
	t.Setenv("FAKE_SMI_PIDFILE", filepath.Join(t.TempDir(), "pid"))
	t.Setenv("FAKE_SMI_ARGS", filepath.Join(t.TempDir(), "args"))
}

// gone reports whether process pid has ended: it no longer exists, or it is a zombie that only
// waits to be reaped.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// count returns how many samples s holds.
func count(s *Sampler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.samples)
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSamplerNoGPU(t *testing.T) {
	t.Run("no nvidia-smi", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		if s := Start(context.Background(), Options{}); s != nil {
			t.Errorf("Start without nvidia-smi = %v, want nil", s)
		}
	})
	t.Run("no device", func(t *testing.T) {
		fakePATH(t, "nogpu")
		if s := Start(context.Background(), Options{}); s != nil {
			t.Errorf("Start without a GPU = %v, want nil", s)
		}
	})
	t.Run("nil sampler", func(t *testing.T) {
		var s *Sampler
		rec := record.Request{Start: time.Now()}
		s.Join(&rec)
		s.Stop()
		if s.Warning() != "" || s.Drain() != nil || rec.GPUThrottled != nil {
			t.Errorf("a nil sampler said something")
		}
	})
}

func TestSamplerSamples(t *testing.T) {
	for _, mode := range []string{"ok", "old"} {
		t.Run(mode, func(t *testing.T) {
			fakePATH(t, mode)
			s := Start(context.Background(), Options{ServerID: "srv"})
			if s == nil {
				t.Fatal("no sampler")
			}
			pid := s.PID()
			waitFor(t, "twelve samples", 10*time.Second, func() bool { return count(s) >= 12 || gone(pid) })
			s.Stop()
			if !gone(pid) {
				t.Errorf("nvidia-smi %d still runs after Stop", pid)
			}
			if w := s.Warning(); w != "" {
				t.Errorf("warning %q", w)
			}
			args, _ := os.ReadFile(os.Getenv("FAKE_SMI_ARGS"))
			want := EventReasonsField
			if mode == "old" {
				want = ThrottleReasonsField
			}
			if !strings.Contains(string(args), "--query-gpu="+Query(want)) || !strings.Contains(string(args), "-lms 100") {
				t.Errorf("nvidia-smi ran with %q, want the query with %s every 100 ms", args, want)
			}
			got := s.Drain()
			if len(got) < 12 {
				t.Fatalf("%d samples, want 12 or more", len(got))
			}
			if again := s.Drain(); len(again) != 0 {
				t.Errorf("a second Drain returned %d samples again", len(again))
			}
			if v := view(got[6]); v.sm != "1410" || v.temp != "86" || !v.throttled || got[6].ServerID != "srv" ||
				strings.Join(v.reasons, " ") != "sw_power_cap sw_thermal_slowdown hw_thermal_slowdown" {
				t.Errorf("seventh sample %+v, want the thermal slowdown at 1410 MHz", v)
			}
			// The episode lands on the spans that overlap it, and only on them.
			span := func(from, to int) *bool {
				return Join(got, got[from].Time.Add(time.Millisecond), got[to].Time.Add(-time.Millisecond), time.Second).Throttled
			}
			if th := span(0, 3); th == nil || *th {
				t.Errorf("span over samples 1 to 4 throttled %v, want false", th)
			}
			if th := span(3, 5); th == nil || !*th {
				t.Errorf("span over samples 4 to 6 throttled %v, want true", th)
			}
			if th := span(8, 10); th == nil || *th {
				t.Errorf("span over samples 9 to 11 throttled %v, want false", th)
			}
		})
	}
}

// TestSamplerJoinWaits checks that Join waits for the sample after a request's end, so a
// request that just ended is described by every sample taken during it.
func TestSamplerJoinWaits(t *testing.T) {
	fakePATH(t, "ok")
	s := Start(context.Background(), Options{})
	defer s.Stop()
	waitFor(t, "a first sample", 10*time.Second, func() bool { return len(s.Drain()) > 0 })
	start := time.Now()
	time.Sleep(250 * time.Millisecond)
	rec := record.Request{Start: start, E2E: ptr(time.Since(start))}
	s.Join(&rec)
	if rec.GPUSMClockMeanMHz == nil || rec.GPUTempMaxC == nil || rec.GPUThrottled == nil {
		t.Fatalf("joined request has clock %v, temperature %v, throttled %v", rec.GPUSMClockMeanMHz, rec.GPUTempMaxC, rec.GPUThrottled)
	}
	end := start.Add(*rec.E2E)
	s.mu.Lock()
	last := s.samples[len(s.samples)-1].Time
	s.mu.Unlock()
	if !last.After(end) {
		t.Errorf("Join returned before a sample after the request's end (last sample %v, end %v)", last, end)
	}
}

func TestSamplerBroken(t *testing.T) {
	// Each case waits for the failure it is about, never for a fixed time: a busy machine only
	// makes the wait longer. The probe timeout and the stall limit are short only in the cases
	// that test them, since a fake started on a loaded machine can take longer than 300 ms to
	// answer, which would turn a failing probe into a probe that timed out.
	const long = time.Minute
	tests := []struct {
		mode         string
		probe, stall time.Duration
		want         string
	}{
		{"error", long, long, "nvidia-smi failed (status 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{"hangprobe", 300 * time.Millisecond, long, "nvidia-smi did not answer within 300ms"},
		{"hang", long, 300 * time.Millisecond, "nvidia-smi gave no sample for"},
		{"exit", long, long, "nvidia-smi exited (status 15) after 3 samples, while the server ran: Unable to determine the device handle"},
		{"garbage", long, long, `lines of nvidia-smi output were not samples, the first "this is not a sample"`},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			fakePATH(t, tc.mode)
			s := Start(context.Background(), Options{ProbeTimeout: tc.probe, Stall: tc.stall})
			if s == nil {
				t.Fatal("no sampler: a broken nvidia-smi is not the absence of a GPU")
			}
			pid := s.PID()
			waitFor(t, "the warning "+tc.want, long, func() bool { return strings.Contains(s.Warning(), tc.want) })
			rec := record.Request{Start: time.Now().Add(-100 * time.Millisecond), E2E: ptr(50 * time.Millisecond)}
			s.Join(&rec) // returns: a request is never held up by a broken sampler for long
			stopped := time.Now()
			s.Stop()
			// A Stop that waited for the fake's sleep would take ten minutes.
			if d := time.Since(stopped); d > long {
				t.Errorf("Stop took %s", d)
			}
			if pid != 0 && !gone(pid) {
				t.Errorf("nvidia-smi %d still runs after Stop", pid)
			}
			// The warning outlives the process: it is read once the server has stopped.
			w := s.Warning()
			if !strings.HasPrefix(w, "GPU telemetry: ") || !strings.Contains(w, tc.want) {
				t.Errorf("warning %q, want one with %q", w, tc.want)
			}
		})
	}
}

// TestSamplerDiesWithRunner kills a process that runs a sampler with SIGKILL, as a runner can
// be killed, and checks that its nvidia-smi does not outlive it.
func TestSamplerDiesWithRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and kills it")
	}
	fakePATH(t, "ok")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 8)
	if n, _ := out.Read(buf); string(buf[:n]) != "started\n" {
		t.Fatalf("helper said %q", buf[:n])
	}
	var pid int
	waitFor(t, "the fake's pid file", 5*time.Second, func() bool {
		b, _ := os.ReadFile(os.Getenv("FAKE_SMI_PIDFILE"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	if gone(pid) {
		t.Fatalf("nvidia-smi %d is not running", pid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, "nvidia-smi gone after its runner was killed", 5*time.Second, func() bool { return gone(pid) })
}

// TestSamplerTimeZone runs the fake nvidia-smi, which stamps its samples with `date` in the
// zone of its environment, under a zone five and a half hours east of UTC that the runner's
// own clock does not use: the samples must still be stamped when they were taken (within a
// minute of now, where a local time read in the wrong zone is hours off), since the requests
// they are joined to are stamped on the runner's clock.
func TestSamplerTimeZone(t *testing.T) {
	fakePATH(t, "ok")
	// A POSIX zone string: no tz database needed, and glibc's date honours it.
	t.Setenv("TZ", "IST-5:30")
	before := time.Now()
	s := Start(context.Background(), Options{ServerID: "srv"})
	if s == nil {
		t.Fatal("no sampler")
	}
	pid := s.PID()
	waitFor(t, "three samples", 30*time.Second, func() bool { return count(s) >= 3 || gone(pid) })
	s.Stop()
	got := s.Drain()
	if len(got) < 3 {
		t.Fatalf("%d samples (warning %q), want 3 or more", len(got), s.Warning())
	}
	after := time.Now()
	for i, smp := range got {
		if smp.Time.Before(before.Add(-time.Minute)) || smp.Time.After(after.Add(time.Minute)) {
			t.Fatalf("sample %d stamped %s, taken between %s and %s", i, smp.Time, before.UTC(), after.UTC())
		}
	}
}
