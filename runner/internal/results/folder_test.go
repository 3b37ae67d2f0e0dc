package results

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// writeFolder creates a folder under root and appends every request of both test configs,
// with one failure, then closes it as complete. It returns the folder and what it appended.
func writeFolder(t *testing.T, root string) (*Folder, []record.Request) {
	t.Helper()
	exp, configs := testExperiment()
	f, err := Create(root, exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	log, _, err := f.ServerLog("s0-77aa")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(log, "INFO: server ready\n")
	log.Close()
	ready := 12.5
	if err := f.SetServer(ServerInfo{ServerID: "s0-77aa", Engine: "sim", EngineVersion: "0.1.0", Model: "tiny",
		Argv: []string{"runner", "sim", "--api-key", "sk-secret"}, BootStart: t0, BootSeconds: &ready}); err != nil {
		t.Fatal(err)
	}
	var all []record.Request
	for _, c := range configs {
		for seq := 0; seq < 1+c.Warmup+c.Repetitions; seq++ {
			r := fakeRequest(c, seq)
			if c.Index == 1 && seq == 4 {
				r = failedRequest(c, seq)
			}
			if err := f.Append(r); err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
	}
	if err := f.SetServer(ServerInfo{ServerID: "s0-77aa", Engine: "sim", EngineVersion: "0.1.0", Model: "tiny",
		Argv: []string{"runner", "sim"}, BootStart: t0, BootSeconds: &ready, ExitCode: record.Int(0)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	return f, all
}

func TestFolderRoundTrip(t *testing.T) {
	root := t.TempDir()
	f, want := writeFolder(t, root)

	rel, _ := filepath.Rel(root, f.Dir())
	if ok, _ := filepath.Match("golden-sweep/20261129T081200Z-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]", rel); !ok {
		t.Errorf("folder %q is not <experiment>/<UTC time>-<6 hex>", rel)
	}
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusComplete {
		t.Errorf("status %q, want complete", r.Status())
	}
	got, err := r.Requests()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d requests, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("request %d differs:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if notes := r.Notes(); len(notes) > 0 {
		t.Errorf("notes on a complete folder: %q", notes)
	}

	m := r.Manifest()
	if m.End == nil || m.Start != t0 {
		t.Errorf("manifest times start %v end %v", m.Start, m.End)
	}
	if m.Experiment.SHA256 != SHA256([]byte(m.Experiment.Source)) || len(m.Experiment.SHA256) != 64 {
		t.Errorf("experiment sha256 %q does not match its copy", m.Experiment.SHA256)
	}
	if len(m.Servers) != 1 || m.Servers[0].LogFile != "logs/s0-77aa.log" || *m.Servers[0].ExitCode != 0 {
		t.Fatalf("servers %+v", m.Servers)
	}
	if got := strings.Join(m.Servers[0].Argv, " "); got != "runner sim" {
		t.Errorf("argv %q", got)
	}
	b, _ := os.ReadFile(filepath.Join(f.Dir(), ManifestFile))
	for _, secret := range []string{"sk-secret", "hf_secret", "sk-live"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("manifest holds the secret %q", secret)
		}
	}
	if log, err := os.ReadFile(filepath.Join(f.Dir(), "logs", "s0-77aa.log")); err != nil || string(log) != "INFO: server ready\n" {
		t.Errorf("server log %q, %v", log, err)
	}
	servers, err := r.Servers()
	if err != nil || len(servers) != 1 || servers[0].ServerID != "s0-77aa" || *servers[0].BootSeconds != 12.5 {
		t.Errorf("servers.csv: %+v, %v", servers, err)
	}
	stored, err := r.StoredSummary()
	if err != nil {
		t.Fatal(err)
	}
	computed, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2*len(plainMetrics()) || len(stored) != len(computed) {
		t.Fatalf("summary has %d rows, computed %d", len(stored), len(computed))
	}
	for i := range stored {
		if stored[i].Metric != computed[i].Metric || stored[i].N != computed[i].N ||
			!reflect.DeepEqual(stored[i].Warnings, computed[i].Warnings) {
			t.Errorf("stored summary row %d differs from the computed one", i)
		}
	}
	entries, _ := os.ReadDir(f.Dir())
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") || e.Name() == lockFile {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func TestCreateNeverReusesAFolder(t *testing.T) {
	root := t.TempDir()
	exp, configs := testExperiment()
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		f, err := Create(root, exp, configs, testRunInfo()) // the same start time each time
		if err != nil {
			t.Fatal(err)
		}
		if seen[f.Dir()] {
			t.Fatalf("folder %s created twice", f.Dir())
		}
		seen[f.Dir()] = true
		if err := f.Close(StatusFailed); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCreateFailureLeavesNoFolder makes Create fail after it has made the folder (here the
// manifest cannot be encoded; on a full disk it cannot be written): the half-made folder, which
// no command could read or resume, must not be left behind.
func TestCreateFailureLeavesNoFolder(t *testing.T) {
	root := t.TempDir()
	exp, configs := testExperiment()
	nan := math.NaN()
	configs[0].Request.Temperature = &nan
	if f, err := Create(root, exp, configs, testRunInfo()); err == nil {
		f.Close(StatusFailed)
		t.Fatal("Create wrote a manifest holding NaN")
	}
	left, err := os.ReadDir(filepath.Join(root, exp.Name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("a failed Create left %s behind", e.Name())
	}
}

func TestCreateRefusesUnsafeNames(t *testing.T) {
	exp, configs := testExperiment()
	for _, name := range []string{"", "..", "../up", "a/b", "Upper"} {
		exp.Name = name
		if _, err := Create(t.TempDir(), exp, configs, testRunInfo()); err == nil {
			t.Errorf("Create accepted the experiment name %q", name)
		}
	}
}

func TestAppendRefusals(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(StatusFailed)
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		rec  func() (r record.Request)
		want string
	}{
		{"duplicate", func() record.Request { return fakeRequest(configs[0], 0) }, "already has"},
		{"unknown config", func() record.Request { r := fakeRequest(configs[0], 1); r.ConfigID = "nope"; return r }, "unknown config"},
		{"negative seq", func() record.Request { return fakeRequest(configs[0], -1) }, "negative seq"},
	}
	for _, tt := range tests {
		if err := f.Append(tt.rec()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Append error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if d := f.Done(); d.Len() != 1 || !d.Has(configs[0].ID, 0) {
		t.Errorf("Done after refusals: %d rows", d.Len())
	}
}

func TestRunningAndInterruptedStatus(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusRunning {
		t.Errorf("status while the writer holds the folder: %q, want running", r.Status())
	}
	if _, _, err := Resume(f.Dir()); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Resume of a folder in use: %v", err)
	}
	f.abandon() // as if the process died
	r, err = Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusInterrupted {
		t.Errorf("status after the writer died: %q, want interrupted", r.Status())
	}
	if r.Manifest().Status != StatusRunning {
		t.Errorf("manifest status %q, want running as written", r.Manifest().Status)
	}
	reqs, err := r.Requests()
	if err != nil || len(reqs) != 1 {
		t.Errorf("requests of the interrupted folder: %d, %v", len(reqs), err)
	}
}

func TestCloseTwiceAndBadStatus(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusRunning); err == nil {
		t.Error("Close(running) succeeded")
	}
	if err := f.Close(StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusComplete); err == nil {
		t.Error("second Close succeeded")
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err == nil {
		t.Error("Append after Close succeeded")
	}
	r, err := Open(f.Dir())
	if err != nil || r.Status() != StatusInterrupted {
		t.Errorf("status %v, %v", r.Status(), err)
	}
	if time.Since(*r.Manifest().End) > time.Minute {
		t.Errorf("end time %v", r.Manifest().End)
	}
}

func TestCheckExperiment(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(StatusInterrupted)
	m := f.Manifest()
	if err := m.CheckExperiment(exp.Source); err != nil {
		t.Errorf("the same file: %v", err)
	}
	changed := append([]byte(nil), exp.Source...)
	changed = append(changed, "# edited\n"...)
	if err := m.CheckExperiment(changed); err == nil || !strings.Contains(err.Error(), "has changed since the run began") {
		t.Errorf("an edited file: %v", err)
	}
}

// TestMarkInterrupted checks that a process about to exit at once can mark its folder
// interrupted on disk, that the folder can still be resumed, and that a busy folder does not
// hold the exit up.
func TestMarkInterrupted(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if err := f.MarkInterrupted(20 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("MarkInterrupted of a busy folder: %v", err)
	}
	f.mu.Unlock()
	if err := f.MarkInterrupted(time.Second); err != nil {
		t.Fatal(err)
	}
	f.abandon() // the process exits
	m, err := ReadManifest(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusInterrupted || m.End == nil {
		t.Errorf("manifest after MarkInterrupted: status %q, end %v; want interrupted with an end", m.Status, m.End)
	}
	g, done, err := Resume(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if done.Len() != 1 {
		t.Errorf("resume found %d requests, want 1", done.Len())
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	if err := g.MarkInterrupted(time.Second); err != nil {
		t.Errorf("MarkInterrupted of a closed folder: %v", err)
	}
	if m, _ := ReadManifest(f.Dir()); m.Status != StatusComplete {
		t.Errorf("a closed folder was marked %q", m.Status)
	}
}
