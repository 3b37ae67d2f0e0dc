package merge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// fleetSource is an experiment of three servers (one per model) and six configs, with an SLO
// so that load.csv has goodput.
const fleetSource = `version: 1
name: fleet
server:
  engine: sim
request:
  api: chat
  prompt_tokens: 32
matrix:
  server.model: [tiny, small, base]
  request.max_tokens: [16, 32]
warmup: 1
repetitions: 6
slo:
  ttft_ms: 40
`

// fleet is the plan of fleetSource and the folders of its runs: one of the whole plan, and
// shards of it.
type fleet struct {
	exp     *experiment.Experiment
	configs []experiment.Config
	root    string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	return newFleetOf(t, fleetSource)
}

func newFleetOf(t *testing.T, source string) *fleet {
	t.Helper()
	exp, err := experiment.Parse("experiments/fleet.yaml", []byte(source))
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) != 6 {
		t.Fatalf("the fleet experiment expands to %d configs, want 6", len(configs))
	}
	return &fleet{exp: exp, configs: configs, root: t.TempDir()}
}

// fleetCount is the number of shards the fleet's plan is split into.
const fleetCount = 3

// shardConfigs returns the configs of shard i of 3, as a balanced assignment of whole servers
// might make it: shard 0 runs the second server (model small), shard 1 the first and the third,
// shard 2 none.
func (f *fleet) shardConfigs(i int) []experiment.Config {
	var out []experiment.Config
	for _, c := range f.configs {
		model := c.Server.Model
		if i == 0 && model == "small" || i == 1 && model != "small" {
			out = append(out, c)
		}
	}
	return out
}

func (f *fleet) fingerprint(count int) string {
	return results.SHA256(f.exp.Source) + "/" + fmt.Sprint(count)
}

// fleetRequest is the request seq of config c; one measured request fails.
func fleetRequest(c experiment.Config, seq int) record.Request {
	if c.Index == 4 && seq == 5 {
		return failedRequest(c, seq)
	}
	return fakeRequest(c, seq)
}

// folderSpec describes one folder of the fleet.
type folderSpec struct {
	configs   []experiment.Config
	shard     *results.Shard // nil for a run of the whole plan
	host      string
	start     time.Time
	status    results.Status // "" is complete; running leaves the folder open, its writer alive
	telemetry bool           // sample a GPU beside each server
	// loadServer records the server's figures of every config as a load point, as a run that
	// scraped /metrics around its load points does.
	loadServer bool
	exp        *experiment.Experiment
}

// write writes the folder as a run would: each server's log and boot, every request of its
// configs in plan order, GPU samples if asked, and the folder closed with its status.
func (f *fleet) write(t *testing.T, s folderSpec) string {
	t.Helper()
	exp := s.exp
	if exp == nil {
		exp = f.exp
	}
	m := testMachine
	m.Hostname = s.host
	start := s.start
	if start.IsZero() {
		start = t0
	}
	run := results.RunInfo{RunnerVersion: "0.1.0-test", RunnerCommit: "0123456789abcdef",
		Command: []string{"runner", "experiments/fleet.yaml"}, Start: start, Machine: &m}
	if s.shard != nil {
		sh := *s.shard
		sh.Host = s.host
		for _, c := range s.configs {
			sh.Configs = append(sh.Configs, c.ID)
		}
		run.Shard = &sh
	}
	folder, err := results.Create(f.root, exp, s.configs, run)
	if err != nil {
		t.Fatal(err)
	}
	booted := map[string]bool{}
	for _, c := range s.configs {
		if booted[c.ServerID] {
			continue
		}
		booted[c.ServerID] = true
		log, _, err := folder.ServerLog(c.ServerID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(log, "sim serving %s\n", c.Server.Model)
		log.Close()
		boot, exit := 1.5, 0
		if err := folder.SetServer(results.ServerInfo{ServerID: c.ServerID, Engine: "sim", EngineVersion: "0.1.0", Model: c.Server.Model,
			Argv: []string{"runner", "sim", "--model", c.Server.Model}, BootStart: t0.Add(time.Duration(c.Index) * time.Minute),
			BootSeconds: &boot, ExitCode: &exit}); err != nil {
			t.Fatal(err)
		}
		if s.telemetry {
			clock, temp := 1590, 60
			if err := folder.AppendTelemetry([]record.GPUSample{
				{Time: t0.Add(time.Duration(c.Index) * time.Minute), ServerID: c.ServerID, SMClockMHz: &clock, TempC: &temp},
				{Time: t0.Add(time.Duration(c.Index)*time.Minute + 100*time.Millisecond), ServerID: c.ServerID, SMClockMHz: &clock, TempC: &temp},
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range s.configs {
		for seq := range 1 + c.Warmup + c.Repetitions {
			if err := folder.Append(fleetRequest(c, seq)); err != nil {
				t.Fatal(err)
			}
		}
		if s.loadServer {
			n, ttft := 1+c.Warmup+c.Repetitions, time.Duration(10+c.Index)*time.Millisecond
			at := t0.Add(time.Duration(c.Index) * time.Minute)
			if err := folder.AppendLoadServer(results.LoadServerRow{ConfigID: c.ID, ServerID: c.ServerID, Before: at, After: at.Add(30 * time.Second),
				LoadServer: results.LoadServer{Requests: &n, TTFTMean: &ttft}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.status == results.StatusRunning {
		// The folder stays open, its writer alive, until the test ends.
		t.Cleanup(func() { folder.Close(results.StatusInterrupted) })
		return folder.Dir()
	}
	if err := folder.Close(cmpOr(s.status, results.StatusComplete)); err != nil {
		t.Fatal(err)
	}
	return folder.Dir()
}

func cmpOr(s, def results.Status) results.Status {
	if s == "" {
		return def
	}
	return s
}

// shard writes shard i of count with the plan's assignment.
func (f *fleet) shard(t *testing.T, i int, status results.Status) string {
	t.Helper()
	return f.write(t, folderSpec{configs: f.shardConfigs(i), shard: &results.Shard{Index: i, Count: fleetCount,
		Fingerprint: f.fingerprint(fleetCount), Source: "JOB_COMPLETION_INDEX"}, host: fmt.Sprintf("gpu-node-%d", i),
		start: t0.Add(time.Duration(i) * time.Second), status: status, telemetry: i == 0})
}

// single writes the run of the whole plan on one machine.
func (f *fleet) single(t *testing.T) string {
	t.Helper()
	return f.write(t, folderSpec{configs: f.configs, host: "gpu-node-0", telemetry: false})
}

// TestMerge merges three shards, one of them empty, given out of order, and checks the merged
// folder against the run of the whole plan on one machine: the same rows byte for byte (both
// are in plan order), the same summary and load points, and a manifest that records the shards.
func TestMerge(t *testing.T) {
	f := newFleet(t)
	single := f.single(t)
	shards := []string{f.shard(t, 2, ""), f.shard(t, 0, ""), f.shard(t, 1, "")}
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Folders(out, shards, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != results.StatusComplete || rep.Shards != 3 || rep.Configs != 6 || rep.Requests != 6*8 || len(rep.Missing) != 0 {
		t.Errorf("report: %+v, want complete, 3 shards, 6 configs, 48 requests, nothing missing", rep)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes about shards on alike machines and one runner: %q", rep.Notes)
	}
	for _, name := range []string{results.ConfigsFile, results.RequestsFile, results.EventsFile, results.OutputsFile, results.ErrorsFile, results.SummaryFile, results.LoadFile} {
		got, want := readFile(t, filepath.Join(out, name)), readFile(t, filepath.Join(single, name))
		if !bytes.Equal(got, want) {
			t.Errorf("%s of the merged folder differs from the single run's:\n--- merged\n%s\n--- single\n%s", name, got, want)
		}
	}

	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := results.ReadManifest(single)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != results.StatusComplete || m.Shard != nil || m.Merged == nil {
		t.Fatalf("manifest: status %s, shard %v, merged %v", m.Status, m.Shard, m.Merged)
	}
	if !reflect.DeepEqual(m.Configs, sm.Configs) {
		t.Errorf("configs differ from the single run's")
	}
	if !reflect.DeepEqual(m.Experiment, sm.Experiment) {
		t.Errorf("experiment %+v, want %+v", m.Experiment, sm.Experiment)
	}
	wantShards := []results.MergedShard{
		{Index: 0, Folder: shards[1], Host: "gpu-node-0", Status: results.StatusComplete},
		{Index: 1, Folder: shards[2], Host: "gpu-node-1", Status: results.StatusComplete},
		{Index: 2, Folder: shards[0], Host: "gpu-node-2", Status: results.StatusComplete},
	}
	for i := range wantShards {
		wantShards[i].Machine = testMachine
		wantShards[i].Machine.Hostname = wantShards[i].Host
	}
	if m.Merged.Fingerprint != f.fingerprint(3) || m.Merged.Count != 3 || !reflect.DeepEqual(m.Merged.Shards, wantShards) || m.Merged.Missing != nil {
		t.Errorf("merged: %+v, want fingerprint %s, count 3, shards %+v", m.Merged, f.fingerprint(3), wantShards)
	}
	if !m.Start.Equal(t0) {
		t.Errorf("start %s, want the earliest shard's, %s", m.Start, t0)
	}
	var latest time.Time
	for _, d := range shards {
		sm, _ := results.ReadManifest(d)
		if sm.End.After(latest) {
			latest = *sm.End
		}
	}
	if m.End == nil || !m.End.Equal(latest) {
		t.Errorf("end %v, want the latest shard's, %s", m.End, latest)
	}
	wantMachine := testMachine
	wantMachine.Hostname = ""
	if !reflect.DeepEqual(m.Machine, wantMachine) {
		t.Errorf("machine %+v, want shard 0's without a hostname, %+v", m.Machine, wantMachine)
	}
	if m.Command != nil || m.Process != (results.Process{}) || m.Resumes != nil {
		t.Errorf("command %q, process %+v, resumes %v: want none (they are the shards')", m.Command, m.Process, m.Resumes)
	}

	// servers.csv: the boots in plan order, each with its shard, host and log.
	r, err := results.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := r.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range servers {
		shard := "none"
		if s.Shard != nil {
			shard = fmt.Sprint(*s.Shard)
		}
		got = append(got, fmt.Sprintf("%s shard %s on %s, log %s", s.Model, shard, s.Host, s.LogFile))
		if text := readFile(t, filepath.Join(out, s.LogFile)); string(text) != "sim serving "+s.Model+"\n" {
			t.Errorf("%s: %q", s.LogFile, text)
		}
	}
	want := []string{
		fmt.Sprintf("tiny shard 1 on gpu-node-1, log logs/%s.log", f.configs[0].ServerID),
		fmt.Sprintf("small shard 0 on gpu-node-0, log logs/%s.log", f.configs[2].ServerID),
		fmt.Sprintf("base shard 1 on gpu-node-1, log logs/%s.log", f.configs[4].ServerID),
	}
	if !slices.Equal(got, want) {
		t.Errorf("servers.csv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(m.Servers[0].Argv, sm.Servers[0].Argv) {
		t.Errorf("the manifest's boots lost their command lines: %q", m.Servers[0].Argv)
	}

	// telemetry.csv: shard 0's samples, the only shard that sampled a GPU.
	tel, err := r.Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	if len(tel) != 2 || tel[0].ServerID != f.configs[2].ServerID {
		t.Errorf("telemetry: %d samples, want shard 0's 2", len(tel))
	}
	files, err := results.ReadSchema(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, readerSchema(t, out)) || files[len(files)-1].File != results.TelemetryFile {
		t.Errorf("datapackage.json does not describe the merged folder with its telemetry.csv")
	}

	// The merged folder reads as a run: Load takes it whole, with the single run's requests.
	l, err := results.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := results.ReadAll(single)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Requests, sl.Requests) || len(l.Load) != len(sl.Load) || l.Status != results.StatusComplete {
		t.Errorf("the merged folder does not load as the single run does")
	}
	if _, _, err := results.Resume(out); err == nil || !strings.Contains(err.Error(), "a merged folder") {
		t.Errorf("resume of a merged folder: %v, want a refusal", err)
	}
}

// TestMergeIdempotent merges the same shards twice and checks that the two folders are the
// same byte for byte, and that no shard folder changed.
func TestMergeIdempotent(t *testing.T) {
	f := newFleet(t)
	shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
	before := map[string]map[string]string{}
	for _, d := range shards {
		before[d] = hashTree(t, d)
	}
	outs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b", "merged")}
	for _, out := range outs {
		if _, err := Folders(out, shards, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range shards {
		if after := hashTree(t, d); !reflect.DeepEqual(after, before[d]) {
			t.Errorf("%s changed in the merge:\nbefore %v\nafter  %v", d, before[d], after)
		}
	}
	a, b := hashTree(t, outs[0]), hashTree(t, outs[1])
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two merges of the same shards differ:\n%v\n%v", a, b)
	}
	if len(a) < 12 {
		t.Errorf("the merged folder holds %d files: %v", len(a), a)
	}
}

// TestMergeDiscardedAndLogs merges shards that each kept discarded rows and a log of the same
// name, and checks that neither overwrites the other.
func TestMergeDiscardedAndLogs(t *testing.T) {
	f := newFleet(t)
	shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
	for i, d := range shards[:2] {
		if err := os.MkdirAll(filepath.Join(d, results.DiscardedDir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFileT(t, filepath.Join(d, results.DiscardedDir, results.RequestsFile), fmt.Sprintf("rows of shard %d\n", i))
		writeFileT(t, filepath.Join(d, results.LogsDir, "sim-extra.log"), fmt.Sprintf("extra log of shard %d\n", i))
		m, err := results.ReadManifest(d)
		if err != nil {
			t.Fatal(err)
		}
		m.Discarded = []results.Discarded{{ConfigID: m.Configs[0].ID, Rows: 3, Reason: "partial load point", Time: t0}}
		if err := writeManifest(d, m); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Folders(out, shards, Options{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"discarded/shard-0/requests.csv": "rows of shard 0\n",
		"discarded/shard-1/requests.csv": "rows of shard 1\n",
		"logs/sim-extra.log":             "extra log of shard 0\n",
		"logs/shard-1/sim-extra.log":     "extra log of shard 1\n",
	} {
		if got := string(readFile(t, filepath.Join(out, path))); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Discarded) != 2 || m.Discarded[0].ConfigID != f.shardConfigs(0)[0].ID || m.Discarded[1].ConfigID != f.shardConfigs(1)[0].ID {
		t.Errorf("discarded: %+v, want shard 0's then shard 1's", m.Discarded)
	}
}

// TestMergeRefusals checks every set of shards that Folders refuses, and that it then writes
// nothing.
func TestMergeRefusals(t *testing.T) {
	f := newFleet(t)
	s0, s1, s2 := f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")
	single := f.single(t)
	merged := filepath.Join(t.TempDir(), "merged")
	if _, err := Folders(merged, []string{s0, s1, s2}, Options{}); err != nil {
		t.Fatal(err)
	}
	other := newFleetOf(t, strings.Replace(fleetSource, "repetitions: 6", "repetitions: 5", 1))
	otherShard := other.shard(t, 1, "")
	// The same plan cut in four, and a shard of three with another fingerprint.
	four := f.write(t, folderSpec{configs: f.shardConfigs(1), shard: &results.Shard{Index: 1, Count: 4, Fingerprint: f.fingerprint(4)}, host: "n4"})
	forged := f.write(t, folderSpec{configs: f.shardConfigs(1), shard: &results.Shard{Index: 1, Count: 3, Fingerprint: "0badf00d/3"}, host: "nf"})
	again := f.shard(t, 1, "")
	running := f.shard(t, 1, results.StatusRunning)
	failed := f.shard(t, 0, results.StatusFailed)
	interrupted := f.shard(t, 0, results.StatusInterrupted)
	outOfRange := f.write(t, folderSpec{configs: nil, shard: &results.Shard{Index: 3, Count: 3, Fingerprint: f.fingerprint(3)}, host: "nx"})
	// Shard 2 holding what shard 1 holds.
	overlap := f.write(t, folderSpec{configs: f.shardConfigs(1), shard: &results.Shard{Index: 2, Count: 3, Fingerprint: f.fingerprint(3)}, host: "no"})
	nonEmpty := t.TempDir()
	writeFileT(t, filepath.Join(nonEmpty, "notes.txt"), "mine\n")
	ids := func(cs []experiment.Config) string {
		var parts []string
		for _, c := range cs {
			parts = append(parts, c.ID+" ("+c.Label+")")
		}
		return strings.Join(parts, ", ")
	}

	tests := []struct {
		name    string
		out     string // "" is a new folder
		dirs    []string
		partial bool
		want    []string // each a line of the error
		usage   bool     // the error is about out, not the shards
		badOut  bool     // the error wraps ErrBadOut
	}{
		{name: "not a shard", dirs: []string{s0, single, s2},
			want: []string{single + ": not a shard folder: its manifest has no shard"}},
		{name: "a merged folder", dirs: []string{s0, s1, s2, merged},
			want: []string{merged + ": a merged folder, not a shard folder"}},
		{name: "not a result folder", dirs: []string{s0, s1, s2, nonEmpty},
			want: []string{nonEmpty + ": no manifest.json: not a result folder"}},
		{name: "another experiment", dirs: []string{s0, otherShard, s2},
			want: []string{otherShard + ": a shard of another experiment file (fleet, sha256 " + results.SHA256(other.exp.Source)[:12] + "; " + s0 + " is of fleet, sha256 " + results.SHA256(f.exp.Source)[:12] + ")"}},
		{name: "another count", dirs: []string{s0, four, s2},
			want: []string{four + ": shard 1 of 4, but " + s0 + " is a shard of 3: the folders split the experiment in different ways"}},
		{name: "another fingerprint", dirs: []string{s0, forged, s2},
			want: []string{forged + ": plan fingerprint 0badf00d/3 differs from " + s0 + "'s " + f.fingerprint(3)[:12]}},
		{name: "a folder given twice", dirs: []string{s0, s1, s2, s1},
			want: []string{s1 + ": shard 1 of 3 is given twice (also " + s1 + ")"}},
		{name: "a shard given twice", dirs: []string{s0, s1, s2, again},
			want: []string{again + ": shard 1 of 3 is given twice (also " + s1 + ")"}},
		{name: "a shard still running", dirs: []string{s0, running, s2}, partial: true,
			want: []string{running + ": shard 1 of 3 is still running (pid " + fmt.Sprint(os.Getpid())}},
		{name: "an index out of range", dirs: []string{s0, s1, s2, outOfRange},
			want: []string{outOfRange + ": shard index 3 of 3 is out of range"}},
		{name: "a config in two shards", dirs: []string{s0, s1, overlap},
			want: []string{overlap + ": shard 2 of 3 holds configs that shard 1 of 3 (" + s1 + ") holds too: " +
				strings.Join(configIDs(f.shardConfigs(1)), ", ") + "; each config belongs to one shard"}},
		{name: "a missing shard", dirs: []string{s0, s2},
			want: []string{"shard 1 of 3 is missing: no folder given holds it; its configs: " + ids(f.shardConfigs(1))}},
		{name: "two missing shards", dirs: []string{s2},
			want: []string{"shards 0, 1 of 3 are missing: no folder given holds them; their configs: " + ids(f.configs)}},
		{name: "a failed shard", dirs: []string{failed, s1, s2},
			want: []string{failed + ": shard 0 of 3 is failed, not complete; its configs: " + ids(f.shardConfigs(0)) + " (finish it with --resume, or merge with --partial)"}},
		{name: "an interrupted shard and a missing one", dirs: []string{interrupted, s2},
			want: []string{interrupted + ": shard 0 of 3 is interrupted, not complete; its configs: " + ids(f.shardConfigs(0)),
				"shard 1 of 3 is missing"}},
		{name: "every problem at once", dirs: []string{single, failed, four},
			want: []string{single + ": not a shard folder", four + ": shard 1 of 4", failed + ": shard 0 of 3 is failed"}},
		{name: "an output folder that is not empty", out: nonEmpty, dirs: []string{s0, s1, s2}, usage: true, badOut: true,
			want: []string{nonEmpty + " cannot hold the merged folder: it exists and is not empty"}},
		{name: "an output folder that is a file", out: filepath.Join(nonEmpty, "notes.txt"), dirs: []string{s0, s1, s2}, usage: true, badOut: true,
			want: []string{"notes.txt cannot hold the merged folder: it is a file"}},
		{name: "an output folder inside a shard", out: filepath.Join(s1, "merged"), dirs: []string{s0, s1, s2}, usage: true, badOut: true,
			want: []string{"merged cannot hold the merged folder: it is inside the shard folder " + s1}},
		{name: "no shards", dirs: nil, usage: true, want: []string{"no shard folders given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged")
			}
			before := hashTree(t, filepath.Dir(out))
			_, err := Folders(out, tt.dirs, Options{Partial: tt.partial})
			if err == nil {
				t.Fatal("merged")
			}
			var me *Error
			if errors.As(err, &me) == tt.usage {
				t.Errorf("error %T: want a *Error %v", err, !tt.usage)
			}
			if errors.Is(err, ErrBadOut) != tt.badOut {
				t.Errorf("errors.Is(err, ErrBadOut) = %v, want %v", !tt.badOut, tt.badOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if me != nil && len(me.Problems) != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%v", len(me.Problems), len(tt.want), err)
			}
			if after := hashTree(t, filepath.Dir(out)); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused merge changed %s", filepath.Dir(out))
			}
		})
	}
}

// TestMergePartial merges shards with one missing and one failed: with --partial the merged
// folder holds the complete shards' configs, says incomplete and lists the others.
func TestMergePartial(t *testing.T) {
	f := newFleet(t)
	s0, s2 := f.shard(t, 0, ""), f.shard(t, 2, "")
	failed := f.shard(t, 1, results.StatusFailed)
	tests := []struct {
		name        string
		dirs        []string
		wantConfigs []experiment.Config
		wantMissing []experiment.Config
	}{
		{"a missing shard", []string{s2, s0}, f.shardConfigs(0), f.shardConfigs(1)},
		{"a failed shard", []string{s0, failed, s2}, f.shardConfigs(0), f.shardConfigs(1)},
		{"only the empty shard", []string{s2}, nil, f.configs},
		{"nothing missing", []string{s0, f.shard(t, 1, ""), s2}, f.configs, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			rep, err := Folders(out, tt.dirs, Options{Partial: true})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus := results.StatusIncomplete
			if tt.wantMissing == nil {
				wantStatus = results.StatusComplete
			}
			l, err := results.ReadAll(out)
			if err != nil {
				t.Fatal(err)
			}
			if l.Status != wantStatus || rep.Status != wantStatus {
				t.Errorf("status %s (report %s), want %s", l.Status, rep.Status, wantStatus)
			}
			if got := configIDs(l.Manifest.Configs); !slices.Equal(got, configIDs(tt.wantConfigs)) {
				t.Errorf("configs %v, want %v", got, configIDs(tt.wantConfigs))
			}
			if !slices.Equal(l.Manifest.Merged.Missing, configIDs(tt.wantMissing)) || !slices.Equal(rep.Missing, configIDs(tt.wantMissing)) {
				t.Errorf("missing configs %v (report %v), want %v", l.Manifest.Merged.Missing, rep.Missing, configIDs(tt.wantMissing))
			}
			want := 0
			for _, c := range tt.wantConfigs {
				want += 1 + c.Warmup + c.Repetitions
			}
			if len(l.Requests) != want || len(l.Load) != len(tt.wantConfigs) {
				t.Errorf("%d requests and %d load points, want %d and %d", len(l.Requests), len(l.Load), want, len(tt.wantConfigs))
			}
			if len(l.Manifest.Merged.Shards) != len(tt.dirs) {
				t.Errorf("merged.shards lists %d folders, want every one given, %d", len(l.Manifest.Merged.Shards), len(tt.dirs))
			}
		})
	}
}

// TestMergeRedactedPlan checks that the configs of a missing shard of an experiment whose copy
// had a secret, which changes the ids, are named by plan position and label.
func TestMergeRedactedPlan(t *testing.T) {
	f := newFleetOf(t, strings.Replace(fleetSource, "  engine: sim\n", "  engine: sim\n  env: {HF_TOKEN: hf_secret}\n", 1))
	s0 := f.shard(t, 0, "")
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Folders(out, []string{s0}, Options{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range f.configs {
		if c.Server.Model != "small" {
			want = append(want, fmt.Sprintf("#%d %s", c.Index, c.Label))
		}
	}
	if !slices.Equal(rep.Missing, want) {
		t.Errorf("missing %q, want %q", rep.Missing, want)
	}
}

// TestMergeNotes checks that shards on different kinds of machine, or run by different runner
// builds, are noted.
func TestMergeNotes(t *testing.T) {
	f := newFleet(t)
	shards := []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
	m, err := results.ReadManifest(shards[1])
	if err != nil {
		t.Fatal(err)
	}
	m.Machine.GPUs = []results.GPU{{Name: "NVIDIA L4", Driver: "550.54.15", MemoryMiB: 23034}}
	m.Runner.Version = "0.2.0"
	if err := writeManifest(shards[1], m); err != nil {
		t.Fatal(err)
	}
	rep, err := Folders(filepath.Join(t.TempDir(), "merged"), shards, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "shard 1 of 3: linux/amd64, AMD EPYC 7B13 × 2, NVIDIA L4 23034 MiB driver 550.54.15") ||
		!strings.Contains(rep.Notes[1], "shard 1 of 3: 0.2.0 (0123456789ab)") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

// configIDs returns the ids of configs.
func configIDs(cs []experiment.Config) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestMergeUnlistedConfigs merges with --partial a set that lacks a shard whose configs cannot
// be listed, since the experiment copy no longer loads: the folder is incomplete all the same.
func TestMergeUnlistedConfigs(t *testing.T) {
	f := newFleet(t)
	s0 := f.shard(t, 0, "")
	m, err := results.ReadManifest(s0)
	if err != nil {
		t.Fatal(err)
	}
	m.Experiment.Source = "version: 1\nname: fleet\nmatrix: {no_such_axis: [1]}\n"
	if err := writeManifest(s0, m); err != nil {
		t.Fatal(err)
	}
	_, err = Folders(filepath.Join(t.TempDir(), "refused"), []string{s0}, Options{})
	if err == nil || !strings.Contains(err.Error(), "shards 1, 2 of 3 are missing: no folder given holds them; their configs: unknown (the experiment copy in the manifest does not load: ") {
		t.Errorf("merge without --partial: %v", err)
	}
	rep, err := Folders(filepath.Join(t.TempDir(), "merged"), []string{s0}, Options{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != results.StatusIncomplete || len(rep.Missing) != 0 || len(rep.Notes) != 1 ||
		!strings.HasPrefix(rep.Notes[0], "the configs of the missing shards are not listed: ") {
		t.Errorf("report %+v, want incomplete with a note", rep)
	}
}

// hashTree returns the sha256 of every file under dir by its path, and each folder as "dir".
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFileT(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fleetRuns writes the run of the fleet's whole plan on one machine and the three shards of
// it, for the tests outside the package.
func fleetRuns(t *testing.T) (single string, shards []string) {
	t.Helper()
	f := newFleet(t)
	return f.single(t), []string{f.shard(t, 0, ""), f.shard(t, 1, ""), f.shard(t, 2, "")}
}

// TestMergeLoadServer merges shards whose runs recorded the server's figures per load point:
// load_server.csv holds every load point's row once, in plan order, and load.csv carries them,
// as a run of the whole plan on one machine writes them.
func TestMergeLoadServer(t *testing.T) {
	f := newFleet(t)
	single := f.write(t, folderSpec{configs: f.configs, host: "gpu-node-0", loadServer: true})
	var shards []string
	for i := range fleetCount {
		shards = append(shards, f.write(t, folderSpec{configs: f.shardConfigs(i), shard: &results.Shard{Index: i, Count: fleetCount,
			Fingerprint: f.fingerprint(fleetCount), Source: "JOB_COMPLETION_INDEX"}, host: fmt.Sprintf("gpu-node-%d", i),
			start: t0.Add(time.Duration(i) * time.Second), loadServer: true}))
	}
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Folders(out, shards, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.LoadServerFile, results.LoadFile} {
		got, want := readFile(t, filepath.Join(out, name)), readFile(t, filepath.Join(single, name))
		if !bytes.Equal(got, want) {
			t.Errorf("%s of the merged folder differs from the single run's:\n--- merged\n%s\n--- single\n%s", name, got, want)
		}
	}
	if !strings.Contains(string(readFile(t, filepath.Join(out, results.SchemaFile))), results.LoadServerFile) {
		t.Errorf("datapackage.json of the merged folder does not describe %s", results.LoadServerFile)
	}
}
