package results

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// tearAppend writes what a process killed in the middle of Append(rec) leaves: the events,
// the output line, then only the first part of the requests.csv row, without its line break.
func tearAppend(t *testing.T, dir string, rec record.Request) {
	t.Helper()
	id := RequestID(rec.ConfigID, rec.Seq)
	var ev [][]string
	for _, e := range rec.EventList {
		ev = append(ev, EventsCSV.row(&EventRow{RequestID: id, Event: e}))
	}
	out, _ := encodeJSONLine(&OutputRow{RequestID: id, ConfigID: rec.ConfigID, Seq: rec.Seq, Text: rec.OutputText})
	row := encodeCSV(RequestsCSV.row(&rec))
	for _, w := range []struct {
		name string
		b    []byte
	}{{EventsFile, encodeCSV(ev...)}, {OutputsFile, out}, {RequestsFile, row[:len(row)/2]}} {
		file, err := os.OpenFile(filepath.Join(dir, w.name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		file.Write(w.b)
		file.Close()
	}
}

// plan lists every request of the test experiment, in the order a run sends them.
func plan(configs []experiment.Config) []record.Request {
	var all []record.Request
	for _, c := range configs {
		for seq := 0; seq < 1+c.Warmup+c.Repetitions; seq++ {
			all = append(all, fakeRequest(c, seq))
		}
	}
	return all
}

func TestResumeAfterTornWrite(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	all := plan(configs)
	// Requests 0..10 are complete, 11 (config 1, seq 3) is cancelled and 12 is torn: its 34
	// events and its output are written, its row only in part, at line 14 (after the header).
	const stop = 11
	for _, r := range all[:stop] {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	canceled := all[stop]
	canceled.Status, canceled.ErrorClass, canceled.Error = record.StatusFailed, record.ErrCanceled, "context canceled"
	if err := f.Append(canceled); err != nil {
		t.Fatal(err)
	}
	f.abandon()
	tearAppend(t, dir, all[stop+1])

	// A reader loads the interrupted folder, skipping the torn line and the orphaned rows.
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusInterrupted {
		t.Errorf("status %q, want interrupted", r.Status())
	}
	got, err := r.Requests()
	if err != nil {
		t.Fatalf("reading the interrupted folder: %v", err)
	}
	if len(got) != stop+1 || got[stop].ErrorClass != record.ErrCanceled {
		t.Errorf("read %d requests, want %d with the cancelled one last", len(got), stop+1)
	}
	notes := strings.Join(r.Notes(), "\n")
	if !strings.Contains(notes, "requests.csv:14: skipped a torn last line") || !strings.Contains(notes, "skipped 34 events") {
		t.Errorf("notes:\n%s", notes)
	}
	if _, err := r.StoredSummary(); err == nil {
		t.Error("an interrupted folder has a summary.csv")
	}

	// A complete folder with the same torn line is an error, naming file and line.
	if _, _, err := scanRequestsFile(dir); err == nil || !strings.Contains(err.Error(), "requests.csv:14: torn last line") {
		t.Errorf("strict read of a torn file: %v", err)
	}

	f2, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if done.Len() != stop {
		t.Errorf("Done holds %d requests, want %d", done.Len(), stop)
	}
	for i, rq := range all {
		if want := i < stop; done.Has(rq.ConfigID, rq.Seq) != want {
			t.Errorf("Done.Has(%s, %d) = %v, want %v", rq.ConfigID, rq.Seq, !want, want)
		}
	}
	if n := done.Count(configs[0].ID); n != 8 {
		t.Errorf("Done.Count(config 0) = %d, want 8", n)
	}
	for _, name := range []string{RequestsFile, EventsFile, OutputsFile} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		id := RequestID(all[stop].ConfigID, all[stop].Seq)
		if !bytes.HasSuffix(b, []byte("\n")) || bytes.Contains(b, []byte(id+",")) || bytes.Contains(b, []byte(`"`+id+`"`)) {
			t.Errorf("%s still holds rows of %s or a torn line after the repair", name, id)
		}
	}
	log, _, err := f2.ServerLog("s0-77aa")
	if err != nil {
		t.Fatal(err)
	}
	log.Close()
	if err := f2.SetServer(ServerInfo{ServerID: "s0-77aa", Engine: "sim"}); err != nil {
		t.Fatal(err)
	}
	for _, rq := range all {
		if !done.Has(rq.ConfigID, rq.Seq) {
			if err := f2.Append(rq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f2.Append(all[0]); err == nil {
		t.Error("the resumed folder accepted a request it already had")
	}
	if err := f2.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}

	final, err := ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(final, all) {
		t.Errorf("after the resume the folder holds %d requests; want the %d planned, once each, in order", len(final), len(all))
	}
	r, _ = Open(dir)
	m := r.Manifest()
	if r.Status() != StatusComplete || len(m.Resumes) != 1 || len(m.Servers) != 1 ||
		m.Servers[0].Resume != 1 || m.Servers[0].LogFile != "logs/s0-77aa.resume-1.log" {
		t.Errorf("manifest after resume: status %s, resumes %v, servers %+v", r.Status(), m.Resumes, m.Servers)
	}
	sum, err := r.StoredSummary()
	if err != nil || len(sum) != 2*len(plainMetrics()) || sum[0].N != 6 {
		t.Errorf("summary after resume: %d rows, %v", len(sum), err)
	}
	if _, _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), "complete") {
		t.Errorf("Resume of a complete folder: %v", err)
	}
}

// scanRequestsFile reads requests.csv strictly, as for a complete folder.
func scanRequestsFile(dir string) ([]record.Request, int, error) {
	var out []record.Request
	_, err := scanAll(dir, RequestsFile, RequestsCSV.NewScanner, false, func(r record.Request, _ int) error {
		out = append(out, r)
		return nil
	})
	return out, len(out), err
}

func TestResumeRepairsHeaderlessFiles(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	f.abandon()
	// A crash before the headers were written: one file torn inside its header, one missing.
	os.WriteFile(filepath.Join(dir, RequestsFile), []byte("schema_version,requ"), 0o644)
	os.Remove(filepath.Join(dir, EventsFile))
	f2, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if done.Len() != 0 {
		t.Errorf("Done holds %d", done.Len())
	}
	if err := f2.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	if err := f2.Close(StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequests(dir)
	if err != nil || len(got) != 1 || len(got[0].EventList) != 18 {
		t.Fatalf("after repair: %d requests, %v", len(got), err)
	}
}

// TestCrashHelper is not a test on its own: TestResumeAfterKill runs the test binary again
// with RESULTS_CRASH_ROOT set, and this process then writes part of a run, starts one more
// row and kills itself with SIGKILL in the middle of it.
func TestCrashHelper(t *testing.T) {
	root := os.Getenv("RESULTS_CRASH_ROOT")
	if root == "" {
		t.Skip("runs only as the child process of TestResumeAfterKill")
	}
	exp, configs := testExperiment()
	f, err := Create(root, exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	all := plan(configs)
	for _, r := range all[:5] {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	tearAppend(t, f.Dir(), all[5])
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RESULTS_CRASH_ROOT="+root)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "golden-sweep", "*"))
	if len(dirs) != 1 {
		t.Fatalf("child left %d folders", len(dirs))
	}
	dir := dirs[0]
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusInterrupted {
		t.Errorf("status after SIGKILL: %q, want interrupted", r.Status())
	}
	if got, err := r.Requests(); err != nil || len(got) != 5 {
		t.Errorf("reader after SIGKILL: %d requests, %v", len(got), err)
	}
	f, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, configs := testExperiment()
	all := plan(configs)
	for _, rq := range all {
		if !done.Has(rq.ConfigID, rq.Seq) {
			if err := f.Append(rq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, all) {
		t.Errorf("after kill and resume: %d requests, want the %d planned once each", len(got), len(all))
	}
}
