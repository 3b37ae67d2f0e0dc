// Package resultstest builds result folders for tests, as net/http/httptest builds servers.
//
// A Builder describes a folder: the experiment, its configs, the run, the servers and a
// function that draws each request from a seeded random source. Write writes the folder
// through the results package's own writer, so a test reads exactly what a run leaves;
// Records returns the same requests in memory for tests that need no folder. Sweep is a
// ready-made latency model of a vLLM server over prompt and output lengths.
//
// The package is for tests only; it never detects the machine it runs on and never reads the
// clock, so that the folders it writes are the same on every run.
package resultstest

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// Start is the start time of a folder whose Builder leaves Run.Start zero.
var Start = time.Date(2026, 11, 29, 8, 12, 0, 0, time.UTC)

// Machine returns the machine a folder records when its Builder leaves Run.Machine nil: an
// eight-CPU amd64 host with one Tesla T4.
func Machine() results.Machine {
	return results.Machine{Arch: "linux/amd64", CPU: "AMD EPYC 7B13", CPUs: 8,
		GPUs: []results.GPU{{Index: 0, Name: "Tesla T4", Driver: "535.104.05", MemoryMiB: 15360}}}
}

// Experiment returns a minimal experiment named name, whose source is "name: NAME\n".
func Experiment(name string) *experiment.Experiment {
	return &experiment.Experiment{Version: 1, Name: name, Source: []byte("name: " + name + "\n")}
}

// Ms returns x milliseconds rounded to whole microseconds, as a record's duration; the
// folder's six-decimal milliseconds hold it exactly.
func Ms(x float64) *time.Duration {
	return record.Dur(time.Duration(math.Round(x*1e3)) * time.Microsecond)
}

// Draw is what a Builder's Request function is given for each request.
type Draw struct {
	Rand   *rand.Rand        // the folder's random source, shared by all its requests in order
	Config experiment.Config // the request's config
	Seq    int               // the request's seq within its config, from 0
	N      int               // the request's position in the folder, from 0
}

// Phase returns the phase and repetition number of the request as a run numbers them: seq 0
// is the first request after boot, the next Config.Warmup are warm-ups, the rest measured.
func (d Draw) Phase() (record.Phase, int) {
	switch {
	case d.Seq == 0:
		return record.PhaseFirst, 0
	case d.Seq <= d.Config.Warmup:
		return record.PhaseWarmup, d.Seq - 1
	}
	return record.PhaseMeasure, d.Seq - 1 - d.Config.Warmup
}

// Builder describes a result folder. The zero value of each field but Experiment, Configs and
// Request has a documented default.
type Builder struct {
	// Experiment is the experiment the folder records; Experiment(name) makes a minimal one.
	Experiment *experiment.Experiment
	// Configs are the folder's configs, in order.
	Configs []experiment.Config
	// Run is what the runner knows about itself. A zero Start means the package's Start, a nil
	// Machine the package's Machine().
	Run results.RunInfo
	// Servers are recorded before the first request, each as it should read when the folder is
	// finished (exit status included).
	Servers []results.ServerInfo
	// Logs maps a server id to the text of its log, written to the folder's logs/ before the
	// servers are recorded, so that each server's log_file names it.
	Logs map[string]string
	// Seed seeds the PCG source of Draw.Rand; each Write and Records starts it afresh.
	Seed [2]uint64
	// Requests returns how many requests config c has; nil means 1 + c.Warmup + c.Repetitions.
	Requests func(c experiment.Config) int
	// Request draws one request; it is called for every config in order, seq 0 upwards.
	Request func(d Draw) record.Request
	// Status is how the folder ends: "" or complete, interrupted and failed close it so;
	// running leaves it as a killed run does, with the manifest saying running, no summary
	// and no live writer.
	Status results.Status
}

// Records returns the folder's requests in the order Write appends them, without writing a
// folder.
func (b *Builder) Records() []record.Request {
	var out []record.Request
	b.each(func(r record.Request) error {
		out = append(out, r)
		return nil
	})
	return out
}

// each calls fn with every request in order, stopping at the first error.
func (b *Builder) each(fn func(record.Request) error) error {
	rng := rand.New(rand.NewPCG(b.Seed[0], b.Seed[1]))
	n := 0
	for _, c := range b.Configs {
		count := 1 + c.Warmup + c.Repetitions
		if b.Requests != nil {
			count = b.Requests(c)
		}
		for seq := range count {
			if err := fn(b.Request(Draw{Rand: rng, Config: c, Seq: seq, N: n})); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

// Write writes the folder under root, as results.Create names it
// (root/<experiment name>/<time>-<hex>/), and returns its path. Any error fails t.
func (b *Builder) Write(t testing.TB, root string) string {
	t.Helper()
	run := b.Run
	if run.Start.IsZero() {
		run.Start = Start
	}
	if run.Machine == nil {
		m := Machine()
		run.Machine = &m
	}
	f, err := results.Create(root, b.Experiment, b.Configs, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Servers {
		text, ok := b.Logs[s.ServerID]
		if !ok {
			continue
		}
		log, _, err := f.ServerLog(s.ServerID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.WriteString(log, text)
		if cerr := log.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range b.Servers {
		if err := f.SetServer(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.each(f.Append); err != nil {
		t.Fatal(err)
	}
	switch b.Status {
	case results.StatusRunning:
		return abandon(t, f, root)
	case "":
		err = f.Close(results.StatusComplete)
	default:
		err = f.Close(b.Status)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Dir()
}

// abandon leaves f as a killed run does: it copies the folder while its writer still holds
// it, so that the copy's manifest says running and no process holds its lock, then closes the
// original. The copy takes the original's place under root.
func abandon(t testing.TB, f *results.Folder, root string) string {
	t.Helper()
	tmp, err := os.MkdirTemp(root, ".abandoned-")
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(tmp, "copy")
	if err := os.CopyFS(cp, os.DirFS(f.Dir())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(results.StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(f.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cp, f.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	return f.Dir()
}

// WriteDir writes the folder at exactly dir, which must not exist yet, for tests whose output
// names the folder, and returns dir. Any error fails t.
func (b *Builder) WriteDir(t testing.TB, dir string) string {
	t.Helper()
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, ".resultstest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Rename(b.Write(t, tmp), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// EditManifest rewrites the manifest of the folder at dir with edit applied to it as generic
// JSON, for tests of what a reader makes of a manifest the writer would not write (a newer
// format version, say). Any error fails t.
func EditManifest(t testing.TB, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, results.ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
