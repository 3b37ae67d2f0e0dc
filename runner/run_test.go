package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// writeExperiment writes an experiment file into dir and returns its path.
func writeExperiment(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(body, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// onlyFolder returns the single result folder under root/name.
func onlyFolder(t *testing.T, root, name string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, name, "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("result folders under %s: %v %v", filepath.Join(root, name), dirs, err)
	}
	return dirs[0]
}

// survivors returns the live processes whose command line or environment contains marker.
func survivors(marker string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !strings.Contains(string(cmd)+"\x00"+string(env), marker) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(p, "stat"))
		// A zombie has exited; only its parent's wait is missing (PID 1 in a container may
		// never reap it).
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			continue
		}
		out = append(out, filepath.Base(p)+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// checkNoSurvivors fails when a process carrying marker is still alive shortly after the runner
// exited.
func checkNoSurvivors(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := survivors(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server processes outlived the runner:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runBinary runs the built runner and returns its exit status, stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	return runIn(t, "", bin, args)
}

// runIn runs the built runner in the working directory dir ("" for the test's own), with
// extra environment variables env (NAME=VALUE).
func runIn(t *testing.T, dir, bin string, args []string, env ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// readRequests loads a folder's requests.
func readRequests(t *testing.T, dir string) []record.Request {
	t.Helper()
	reqs, err := results.ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// committedExperiment loads and expands experiments/NAME.yaml and returns its absolute path.
func committedExperiment(t *testing.T, name string) (*experiment.Experiment, []experiment.Config, string) {
	t.Helper()
	file, err := filepath.Abs(filepath.Join("..", "experiments", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := experiment.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return e, configs, file
}

// readRun reads the requests of the one result folder under root/name, checks that it holds
// every request of configs (one server: its first request, then each config's warm-up and
// repetitions), and returns them with each one's config.
func readRun(t *testing.T, root, name string, configs []experiment.Config) (string, []record.Request, map[string]experiment.Config) {
	t.Helper()
	folder := onlyFolder(t, root, name)
	reqs := readRequests(t, folder)
	want := 1
	byID := map[string]experiment.Config{}
	for _, c := range configs {
		want += c.Warmup + c.Repetitions
		byID[c.ID] = c
	}
	if len(reqs) != want {
		t.Fatalf("%d rows, want %d", len(reqs), want)
	}
	return folder, reqs, byID
}

// simExperiment is an experiment on the simulator, marked with a unique model name so that its
// processes can be found.
func simExperiment(marker, args string, reps int) string {
	return fmt.Sprintf(`
version: 1
name: e2e
server:
  engine: sim
  model: %s
  max_model_len: 512
  args: [%s]
request:
  api: completions
  ignore_eos: true
matrix:
  request.max_tokens: [8, 16]
  request.prompt_tokens: [32]
warmup: 1
repetitions: %d
cache: reset
`, marker, args, reps)
}

// TestRunSim runs an experiment end to end against the simulator, as a user would: the built
// binary, a real child server, a result folder on disk.
func TestRunSim(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("e2e-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--decode-per-token", "2ms", "--tokens-per-event", "1,3,1"`, 3))
	root := filepath.Join(dir, "results")
	code, stdout, stderr := runBinary(t, bin, file, "--results", root)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	folder := onlyFolder(t, root, "e2e")
	if !strings.Contains(stdout, "results: "+folder) || !strings.Contains(stdout, "ttft_ms") {
		t.Errorf("stdout lacks the summary or the folder:\n%s", stdout)
	}
	reqs := readRequests(t, folder)
	// One first-after-boot request, then per config one warm-up and three repetitions.
	if len(reqs) != 1+2*(1+3) {
		t.Fatalf("%d requests, want 9", len(reqs))
	}
	phases := map[record.Phase]int{}
	for _, r := range reqs {
		phases[r.Phase]++
		if r.Status != record.StatusOK {
			t.Fatalf("request %s-%d failed: %s %s", r.ConfigID, r.Seq, r.ErrorClass, r.Error)
		}
		if r.TTFT == nil || *r.TTFT <= 0 || r.TPOTToken == nil || *r.TPOTToken <= 0 || *r.E2E < *r.TTFT {
			t.Errorf("implausible timings: ttft %v tpot %v e2e %v", r.TTFT, r.TPOTToken, r.E2E)
		}
		if r.OutputTokens == nil || *r.OutputTokens != r.MaxTokens || !r.TokenSource.Exact() {
			t.Errorf("output tokens %v from %q, want %d per event", r.OutputTokens, r.TokenSource, r.MaxTokens)
		}
		if r.PromptTokensReported == nil || *r.PromptTokensReported != 32 {
			t.Errorf("prompt tokens reported %v, want exactly the 32 requested", r.PromptTokensReported)
		}
		if !r.CacheReset || r.Cache != "reset" {
			t.Errorf("cache %q reset %v, want reset before every request", r.Cache, r.CacheReset)
		}
		// 1, 3, 1 tokens per event: fewer events than tokens.
		if r.TextEvents >= *r.OutputTokens {
			t.Errorf("%d text events for %d tokens", r.TextEvents, *r.OutputTokens)
		}
	}
	if phases[record.PhaseFirst] != 1 || phases[record.PhaseWarmup] != 2 || phases[record.PhaseMeasure] != 6 {
		t.Errorf("phases %v", phases)
	}
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != results.StatusComplete || len(man.Servers) != 1 || man.Servers[0].BootSeconds == nil {
		t.Errorf("manifest: status %s, servers %+v", man.Status, man.Servers)
	}
	if got := man.Servers[0].Argv; len(got) < 2 || got[1] != "sim" {
		t.Errorf("server argv %q", got)
	}
	if _, err := os.Stat(filepath.Join(folder, results.SummaryFile)); err != nil {
		t.Error(err)
	}
}

// TestRunInterruptAndResume interrupts a run with SIGINT, checks that the folder is marked
// interrupted and no server survives, then resumes it and checks that every request is there
// exactly once.
func TestRunInterruptAndResume(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("resume-model-%d", time.Now().UnixNano())
	// Each request streams 16 tokens 15 ms apart: long enough to be interrupted mid-run.
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--decode-per-token", "15ms"`, 4))
	root := filepath.Join(dir, "results")
	log := interruptRun(t, bin, file, root, func(p *os.Process, line string) bool {
		if strings.HasPrefix(line, "[4/") {
			if err := p.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			return true
		}
		return false
	})
	checkNoSurvivors(t, marker)
	folder := onlyFolder(t, root, "e2e")
	if !strings.Contains(log, "--resume "+folder) {
		t.Errorf("stderr does not say how to resume:\n%s", log)
	}
	r, err := results.Open(folder)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != results.StatusInterrupted {
		t.Errorf("status %s, want interrupted", r.Status())
	}
	// The server was stopped, not lost: the folder says how it ended.
	if man, err := results.ReadManifest(folder); err != nil {
		t.Fatal(err)
	} else if len(man.Servers) != 1 || (man.Servers[0].ExitCode == nil && man.Servers[0].ExitSignal == "") {
		t.Errorf("servers of the interrupted run: %+v, want the one server with its exit status", man.Servers)
	}
	before := readRequests(t, folder)
	if len(before) < 4 || len(before) >= 11 {
		t.Fatalf("%d requests recorded before the interrupt, want 4 to 10", len(before))
	}

	code, stdout, errout := runBinary(t, bin, file, "--resume", folder)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errout)
	}
	checkNoSurvivors(t, marker)
	after := readRequests(t, folder)
	if len(after) != 1+2*(1+4) {
		t.Fatalf("%d requests after resume, want 11", len(after))
	}
	seen := map[string]bool{}
	for _, q := range after {
		id := results.RequestID(q.ConfigID, q.Seq)
		if seen[id] {
			t.Errorf("request %s recorded twice", id)
		}
		seen[id] = true
		if q.Status != record.StatusOK {
			t.Errorf("request %s: %s %s", id, q.ErrorClass, q.Error)
		}
	}
	for i, q := range before {
		if a := after[i]; a.ConfigID != q.ConfigID || a.Seq != q.Seq || !a.Start.Equal(q.Start) {
			t.Errorf("row %d changed on resume: %s-%d became %s-%d", i, q.ConfigID, q.Seq, a.ConfigID, a.Seq)
		}
	}
	man, _ := results.ReadManifest(folder)
	if man.Status != results.StatusComplete || len(man.Resumes) != 1 {
		t.Errorf("after resume: status %s, resumes %v", man.Status, man.Resumes)
	}
}

// TestRunSecondSignal checks the two ways a run can receive a second signal. Two SIGTERMs at
// once (as GNU timeout delivers one, to the runner and to its process group) are one request to
// stop: the run stops gracefully. A second Ctrl-C while the run is stopping a server that will
// not stop exits at once. Either way the manifest on disk says interrupted, never running, the
// folder resumes, and no server survives.
func TestRunSecondSignal(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	t.Run("two terms at once", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		marker := fmt.Sprintf("signal-model-%d", time.Now().UnixNano())
		file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--decode-per-token", "15ms"`, 4))
		root := filepath.Join(dir, "results")
		log := interruptRun(t, bin, file, root, func(p *os.Process, line string) bool {
			if strings.HasPrefix(line, "[3/") {
				p.Signal(syscall.SIGTERM)
				p.Signal(syscall.SIGTERM)
				return true
			}
			return false
		})
		if strings.Contains(log, "exiting now") || !strings.Contains(log, "interrupted after") {
			t.Errorf("two SIGTERMs at once did not stop the run gracefully:\n%s", log)
		}
		checkNoSurvivors(t, marker)
		checkInterruptedAndResume(t, bin, file, onlyFolder(t, root, "e2e"), 11)
	})
	t.Run("second interrupt while stopping", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		marker := fmt.Sprintf("signal-model-%d", time.Now().UnixNano())
		// A server whose shell ignores SIGTERM: stopping it takes the whole grace period, here
		// 5 s instead of the default 10 s, which leaves the second Ctrl-C, sent 300 ms into it,
		// seconds of room on a stalled machine.
		script := fmt.Sprintf("trap '' TERM; %s sim --port {port} --model %s --decode-per-token 15ms & while :; do sleep 0.05; done", bin, marker)
		file := writeExperiment(t, dir, "e2e", fmt.Sprintf(`
version: 1
name: e2e
server:
  engine: command
  model: %s
  command: [sh, -c, %q]
  ready_path: /health
request:
  prompt: hello there
  max_tokens: 8
  ignore_eos: true
warmup: 0
repetitions: 6
cache: keep
`, marker, script))
		root := filepath.Join(dir, "results")
		sent := false
		log := interruptRun(t, bin, file, root, func(p *os.Process, line string) bool {
			switch {
			case strings.HasPrefix(line, "[2/") && !sent:
				p.Signal(syscall.SIGINT)
				sent = true
			case strings.Contains(line, "press Ctrl-C again"):
				time.Sleep(300 * time.Millisecond) // the run is now stopping its server
				p.Signal(syscall.SIGINT)
				return true
			}
			return false
		}, "--stop-grace", "5s")
		if !strings.Contains(log, "exiting now") || !strings.Contains(log, "marked interrupted") {
			t.Errorf("a second Ctrl-C did not exit at once, marking the folder:\n%s", log)
		}
		// The guard stops the server once the runner is gone, within the grace period.
		deadline := time.Now().Add(20 * time.Second)
		for len(survivors(marker)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		checkNoSurvivors(t, marker)
		checkInterruptedAndResume(t, bin, file, onlyFolder(t, root, "e2e"), 7)
	})
}

// interruptRun runs the runner on file and calls act with each line it writes on stderr until
// act returns true; it then waits for the runner, checks it exited 130, and returns stderr.
func interruptRun(t *testing.T, bin, file, root string, act func(p *os.Process, line string) bool, flags ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{file, "--results", root}, flags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if act(cmd.Process, sc.Text()) {
			break
		}
	}
	rest, _ := io.ReadAll(stderr)
	log.Write(rest)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, log.String())
	}
	return log.String()
}

// checkInterruptedAndResume checks that the manifest on disk says interrupted, then resumes the
// folder and checks that it ends with want requests.
func checkInterruptedAndResume(t *testing.T, bin, file, folder string, want int) {
	t.Helper()
	man, err := results.ReadManifest(folder)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != results.StatusInterrupted {
		t.Errorf("manifest status %q, want interrupted", man.Status)
	}
	code, out, errout := runBinary(t, bin, file, "--resume", folder)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errout)
	}
	if n := len(readRequests(t, folder)); n != want {
		t.Errorf("%d requests after resume, want %d", n, want)
	}
}

// TestRunBootWantsAKey boots the simulator with an API key set in its environment, which the
// runner cannot see: the hint must say to give the key as --api-key in server.args (which the
// runner sends) or to start the server without one, not suggest server.api_key_env, which
// engine sim does not take. Given as --api-key, the same key works.
func TestRunBootWantsAKey(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("key-model-%d", time.Now().UnixNano())
	body := strings.Replace(simExperiment(marker, "", 1), "  args: []\n", "  env: {VLLM_API_KEY: sk-sim-0123456789}\n", 1)
	file := writeExperiment(t, dir, "e2e", body)
	code, stdout, stderr := runBinary(t, bin, file, "--results", filepath.Join(dir, "results"))
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	if !strings.Contains(stderr, "401") || !strings.Contains(stderr, "start sim without one") ||
		!strings.Contains(stderr, "the runner sends the key given as --api-key in server.args, not only as VLLM_API_KEY") {
		t.Errorf("stderr lacks the 401 and the hint:\n%s", stderr)
	}
	if strings.Contains(stderr, "api_key_env") || strings.Contains(stderr, "sk-sim-0123456789") {
		t.Errorf("stderr suggests server.api_key_env or shows the key:\n%s", stderr)
	}
	file = writeExperiment(t, dir, "e2e", simExperiment(marker, `"--api-key", "sk-sim-0123456789"`, 1))
	if code, stdout, stderr := runBinary(t, bin, file, "--results", filepath.Join(dir, "results2")); code != 0 {
		t.Fatalf("with --api-key in server.args: exit %d\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
}

// TestRunBootFailure checks that a server that cannot boot fails its configs with the engine's
// hint, leaves no process, and exits 1.
func TestRunBootFailure(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("bootfail-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--gpu", "Tesla T4", "--dtype", "bfloat16"`, 2))
	root := filepath.Join(dir, "results")
	code, stdout, stderr := runBinary(t, bin, file, "--results", root)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	if !strings.Contains(stderr, "failed to boot") || !strings.Contains(stderr, "dtype") {
		t.Errorf("stderr lacks the boot failure and its hint:\n%s", stderr)
	}
	folder := onlyFolder(t, root, "e2e")
	reqs := readRequests(t, folder)
	if len(reqs) != 1+2*(1+2) {
		t.Fatalf("%d rows, want every request recorded as failed", len(reqs))
	}
	for _, q := range reqs {
		if q.Status != record.StatusFailed || q.ErrorClass != record.ErrServer || !strings.Contains(q.Error, "Bfloat16") {
			t.Errorf("row %s-%d: %s %s %q", q.ConfigID, q.Seq, q.Status, q.ErrorClass, q.Error)
		}
	}
	man, _ := results.ReadManifest(folder)
	if len(man.Servers) != 1 || man.Servers[0].Error == "" || man.Servers[0].BootSeconds != nil {
		t.Errorf("servers: %+v", man.Servers)
	}
	// A summary in which nothing succeeded is one entry per config, with the cause, not a table
	// of empty cells; an entry longer than the 100 columns of the summary is wrapped.
	flat := strings.Join(strings.Fields(stdout), " ")
	if strings.Contains(stdout, "median") || strings.Contains(stdout, " - ") ||
		strings.Count(flat, "no successful request: 2 of 2 measured requests failed: server: server failed to boot") != 2 {
		t.Errorf("summary of a run in which nothing succeeded:\n%s", stdout)
	}

	// --quiet drops the progress, not the reason why the server did not boot.
	code, stdout, stderr = runBinary(t, bin, file, "--results", filepath.Join(dir, "quiet"), "--quiet")
	if code != 1 {
		t.Fatalf("--quiet: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	if !strings.Contains(stderr, "failed to boot") || !strings.Contains(stderr, "set server.dtype: half") {
		t.Errorf("--quiet: stderr lacks the boot failure and its hint:\n%s", stderr)
	}
	if strings.Contains(stderr, "booting") || strings.Contains(stderr, "requests to send") {
		t.Errorf("--quiet: stderr shows progress:\n%s", stderr)
	}
}

// TestRunMissingExecutable checks that a server whose executable is not installed fails the
// run at once, with the engine's hint, before anything is written; --record-failures writes the
// folder of failed requests instead.
func TestRunMissingExecutable(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "e2e", `
version: 1
name: e2e
server:
  model: org/tiny
  env: {PATH: /nonexistent}
request:
  prompt: hello
matrix:
  request.max_tokens: [8, 16]
repetitions: 2
`)
	root := filepath.Join(dir, "results")
	code, stdout, stderr := runBinary(t, bin, file, "--results", root)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "vllm not found in PATH") || !strings.Contains(stderr, "hint: install vLLM") ||
		!strings.Contains(stderr, "no result folder was written") || strings.Count(stderr, "\n") > 4 {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("a folder was written under %s: %v", root, err)
	}
	code, stdout, stderr = runBinary(t, bin, file, "--results", root, "--record-failures")
	if code != 1 {
		t.Fatalf("--record-failures: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if n := len(readRequests(t, onlyFolder(t, root, "e2e"))); n != 1+2*(1+2) {
		t.Errorf("--record-failures: %d rows, want 7", n)
	}
}

// TestRunServerCrash checks that a server that dies mid-stream fails the request in flight and
// the rest of its requests, quickly, and that the run goes on to finish the folder.
func TestRunServerCrash(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("crash-model-%d", time.Now().UnixNano())
	file := writeExperiment(t, dir, "e2e", simExperiment(marker, `"--fault", "crash@2"`, 2))
	root := filepath.Join(dir, "results")
	code, stdout, stderr := runBinary(t, bin, file, "--results", root)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	checkNoSurvivors(t, marker)
	reqs := readRequests(t, onlyFolder(t, root, "e2e"))
	if len(reqs) != 7 {
		t.Fatalf("%d rows, want 7", len(reqs))
	}
	if reqs[0].Status != record.StatusFailed || reqs[0].ErrorClass != record.ErrTruncated {
		t.Errorf("request in flight: %s %s, want failed truncated", reqs[0].Status, reqs[0].ErrorClass)
	}
	for _, q := range reqs[1:] {
		if q.ErrorClass != record.ErrServer || !strings.Contains(q.Error, "server exited") {
			t.Errorf("row %s-%d: %s %q, want the server's exit", q.ConfigID, q.Seq, q.ErrorClass, q.Error)
		}
	}
	// The user is told, not only the folder: that the server died, how, and its last words.
	for _, want := range []string{"exited unexpectedly with status 1", "last ", "| "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRunEndpoint measures a server that is already running (engine: endpoint), in process.
func TestRunEndpoint(t *testing.T) {
	t.Parallel()
	c := sim.DefaultConfig()
	c.Model = "endpoint-model"
	c.DecodePerToken = time.Millisecond
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	dir := t.TempDir()
	file := writeExperiment(t, dir, "ep", fmt.Sprintf(`
version: 1
name: ep
server:
  engine: endpoint
  url: %s
  model: endpoint-model
request:
  api: chat
  prompt: "Why does the first token take longest?"
  max_tokens: 12
  ignore_eos: true
warmup: 0
repetitions: 3
cache: keep
`, ts.URL))
	root := filepath.Join(dir, "results")
	stdout, stderr, code := runCmd(t, file, "--results", root, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	folder := onlyFolder(t, root, "ep")
	f, err := os.Open(filepath.Join(folder, results.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+4 {
		t.Fatalf("%d lines in requests.csv, want a header and 4 rows", len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, row := range rows[1:] {
		if row[col["status"]] != "ok" || row[col["cache"]] != "keep" || row[col["cache_reset"]] != "false" {
			t.Errorf("row %v", row)
		}
		if n, err := strconv.Atoi(row[col["output_tokens"]]); err != nil || n != 12 {
			t.Errorf("output_tokens %q", row[col["output_tokens"]])
		}
	}
}

// TestRunUsage checks the command line's errors.
func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	bad := writeExperiment(t, dir, "bad", "version: 1\nname: Bad Name\n")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run"}, 2, "want exactly one experiment file"},
		{[]string{bad}, 2, "bad.yaml:2:7: name"},
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, 2, "runner: run: read experiment: open " + filepath.Join(dir, "missing.yaml")},
		{[]string{filepath.Join(dir, "missing.yaml")}, 2, "runner: run: read experiment: open " + filepath.Join(dir, "missing.yaml")},
		{[]string{"run", bad, "--resume", dir}, 2, ""},
	}
	for _, tt := range tests {
		_, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("runner %q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	// --dry-run plans without booting.
	ok := writeExperiment(t, dir, "ok", simExperiment("dry", `"--seed", "1"`, 2))
	stdout, stderr, code := runCmd(t, ok, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "2 configs") {
		t.Errorf("--dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestRunEmptyResults checks that an empty --results is refused as bad usage: an unset variable in a
// script (--results "$OUT") would otherwise write the result folder into the current folder.
func TestRunEmptyResults(t *testing.T) {
	exp := writeExperiment(t, t.TempDir(), "ok", simExperiment("empty-results", `"--seed", "1"`, 1))
	cwd := t.TempDir()
	t.Chdir(cwd)
	stdout, stderr, code := runCmd(t, exp, "--results", "")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--results") {
		t.Errorf("--results '': exit %d, stdout %q, stderr %q; want exit 2 and an error naming --results", code, stdout, stderr)
	}
	if entries, err := os.ReadDir(cwd); err != nil || len(entries) != 0 {
		t.Errorf("--results '' wrote into the current folder: %v %v", entries, err)
	}
}
