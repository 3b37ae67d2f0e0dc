package compare

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// EnvField is one fact of the environment of both folders.
type EnvField struct {
	Name     string // format_version, engine, engine_version, model, dtype, gpu, gpu_driver, server_command, cpu, runner_version, experiment
	Old, New string
	// Matters says whether a difference makes the comparison one of different experiments.
	// The fields that do not matter (the CPU, the runner's version, the experiment file) are
	// shown for information.
	Matters bool
}

// Differs reports whether the field's values differ.
func (f EnvField) Differs() bool { return f.Old != f.New }

// Fingerprints returns the environment fields of two manifests, in a fixed order. A folder of
// several servers has each field's distinct values, sorted and joined by "; ". The server
// command line is compared without its port number and without the directory of the
// executable, which change from run to run without changing what runs.
func Fingerprints(old, new *results.Manifest) []EnvField {
	o, n := fingerprint(old), fingerprint(new)
	out := make([]EnvField, len(o))
	for i := range o {
		out[i] = EnvField{Name: o[i].name, Old: o[i].value, New: n[i].value, Matters: o[i].matters}
	}
	return out
}

// DifferingEnv returns the names of the fields that differ and matter.
func DifferingEnv(env []EnvField) []string {
	var names []string
	for _, f := range env {
		if f.Matters && f.Differs() {
			names = append(names, f.Name)
		}
	}
	return names
}

type fact struct {
	name    string
	value   string
	matters bool
}

func fingerprint(m *results.Manifest) []fact {
	var engines, models, dtypes, versions, commands, drivers []string
	for _, c := range m.Configs {
		engines = append(engines, orUnknown(c.Server.Engine))
		models = append(models, orUnknown(c.Server.Model))
		dtype := c.Server.Dtype
		if dtype == "" {
			dtype = "engine default"
		}
		dtypes = append(dtypes, dtype)
	}
	for _, s := range m.Servers {
		versions = append(versions, orUnknown(s.EngineVersion))
		if len(s.Argv) > 0 {
			commands = append(commands, commandLine(s.Argv))
		}
	}
	var gpus []string
	counts := map[string]int{}
	for _, g := range m.Machine.GPUs {
		if counts[g.Name] == 0 {
			gpus = append(gpus, g.Name)
		}
		counts[g.Name]++
		drivers = append(drivers, orUnknown(g.Driver))
	}
	for i, g := range gpus {
		if counts[g] > 1 {
			gpus[i] = fmt.Sprintf("%d× %s", counts[g], g)
		}
	}
	gpu := "none"
	if len(gpus) > 0 {
		gpu = strings.Join(gpus, ", ")
	} else if m.Machine.GPUError != "" {
		gpu = "unknown (" + m.Machine.GPUError + ")"
	}
	cpu := orUnknown(m.Machine.CPU)
	if m.Machine.CPUs > 0 {
		cpu += fmt.Sprintf(" (%d CPUs)", m.Machine.CPUs)
	}
	runner := orUnknown(m.Runner.Version)
	if m.Runner.Commit != "" {
		runner += " (" + short(m.Runner.Commit) + ")"
	}
	exp := m.Experiment.Name
	if m.Experiment.SHA256 != "" {
		exp += " (sha256 " + short(m.Experiment.SHA256) + ")"
	}
	return []fact{
		{"format_version", strconv.Itoa(m.SchemaVersion), true},
		{"engine", set(engines, "none"), true},
		{"engine_version", set(versions, "none recorded"), true},
		{"model", set(models, "none"), true},
		{"dtype", set(dtypes, "none"), true},
		{"gpu", gpu, true},
		{"gpu_driver", set(drivers, "none"), true},
		{"server_command", set(commands, "none recorded"), true},
		{"cpu", cpu, false},
		{"runner_version", runner, false},
		{"experiment", exp, false},
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// set returns the distinct values of xs, sorted and joined by "; ", or none when xs is empty.
func set(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	xs = append([]string(nil), xs...)
	sort.Strings(xs)
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return strings.Join(out, "; ")
}

// commandLine renders an argv for comparison: the executable by its base name, the value of
// --port (or --port=) as {port}, and arguments that hold spaces or quotes quoted.
func commandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i == 0:
			a = filepath.Base(a)
		case i > 0 && argv[i-1] == "--port":
			a = "{port}"
		case strings.HasPrefix(a, "--port="):
			a = "--port={port}"
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
