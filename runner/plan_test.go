package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/plan"
)

func init() {
	// Other test files of this package may define -update too; it is registered once.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata/")
	}
}

// updating reports whether the test run was asked to rewrite golden files.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./runner -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// runCmd runs the command line and returns its stdout, stderr and exit status.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = exitCode(dispatch(context.Background(), args, &out, &errb), &errb)
	return out.String(), errb.String(), code
}

func TestPlanGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "plan", "*.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata/plan: %v", err)
	}
	for _, in := range inputs {
		for _, format := range plan.Formats() {
			name := strings.TrimSuffix(filepath.Base(in), ".yaml")
			t.Run(name+"/"+format, func(t *testing.T) {
				out, errOut, code := runCmd(t, "plan", in, "--format", format)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				ext := map[string]string{"text": ".txt", "json": ".json", "csv": ".csv"}[format]
				checkGolden(t, strings.TrimSuffix(in, ".yaml")+ext, []byte(out))
			})
		}
	}
}

// TestPlanFormatsAgree decodes the JSON and CSV plans and checks they carry the same configs.
func TestPlanFormatsAgree(t *testing.T) {
	in := filepath.Join("testdata", "plan", "sweep.yaml")
	jsonOut, _, code := runCmd(t, "plan", "--format=json", in)
	if code != 0 {
		t.Fatal("json plan failed")
	}
	csvOut, _, code := runCmd(t, "plan", "--format=csv", in)
	if code != 0 {
		t.Fatal("csv plan failed")
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(jsonOut), &p); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(p.Configs)+1 {
		t.Fatalf("csv has %d rows, json %d configs", len(rows)-1, len(p.Configs))
	}
	wantHead := []string{"index", "id", "server_id", "label", "dtype", "max_tokens", "temperature", "prompt_tokens", "warmup", "repetitions", "requests"}
	if !reflect.DeepEqual(rows[0], wantHead) {
		t.Errorf("csv header %v, want %v", rows[0], wantHead)
	}
	total := 0
	for i, c := range p.Configs {
		r := rows[i+1]
		if r[1] != c.ID || r[2] != c.ServerID || r[3] != c.Label {
			t.Errorf("row %d: csv %v, json %+v", i, r, c)
		}
		for j, path := range p.Axes {
			if r[4+j] != c.AxisValue(path) {
				t.Errorf("row %d, axis %s: csv %q, json %q", i, path, r[4+j], c.AxisValue(path))
			}
		}
		total += c.Requests
	}
	// Besides every config's requests, each server gets one first request after it starts.
	if total+p.Totals.Servers != p.Totals.Requests || p.Totals.FirstRequests != p.Totals.Servers ||
		p.Totals.Requests != p.Totals.FirstRequests+p.Totals.WarmupRequests+p.Totals.MeasuredRequests {
		t.Errorf("totals do not add up: %+v, sum of configs %d", p.Totals, total)
	}
	if p.Totals.Configs != 6 || p.Totals.ServerBoots != 3 {
		t.Errorf("totals %+v; want 6 configs on 3 servers", p.Totals)
	}
}

func TestPlanUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"plan"}, 2, "want exactly one experiment file, got 0"},
		{"two files", []string{"plan", "a.yaml", "b.yaml"}, 2, "want exactly one experiment file, got 2"},
		{"bad format", []string{"plan", "--format", "xml", "testdata/plan/single.yaml"}, 2, `unknown format "xml"`},
		{"unknown flag", []string{"plan", "--fromat", "json", "testdata/plan/single.yaml"}, 2, "flag provided but not defined: -fromat"},
		{"missing file", []string{"plan", "testdata/plan/missing.yaml"}, 2, "missing.yaml: no such file"},
		{"invalid file", []string{"plan", "testdata/validate/invalid.yaml"}, 2, "testdata/validate/invalid.yaml:6:10: server.dtype: must be one of"},
		{"help", []string{"plan", "--help"}, 0, "Usage: runner plan FILE [--shards N] [--format text|json|csv]"},
		{"zero shards", []string{"plan", "--shards", "0", "testdata/plan/single.yaml"}, 2, "plan: --shards 0: the shard count must be at least 1"},
		{"negative shards", []string{"plan", "--shards=-2", "testdata/plan/single.yaml"}, 2, "plan: --shards -2: the shard count must be at least 1"},
		{"more shards than the bound", []string{"plan", "--shards", "20000", "testdata/plan/single.yaml"}, 2, "plan: --shards 20000: the shard count 20000 is more than 10000, the most a plan may be split into"},
		{"a hundred million shards", []string{"plan", "--shards", "100000000", "testdata/plan/single.yaml"}, 2, "the shard count 100000000 is more than 10000"},
		{"the most shards", []string{"plan", "--shards", "10000", "--format", "csv", "testdata/plan/single.yaml"}, 0, ""},
		{"help command", []string{"help", "plan"}, 0, "-format string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr does not contain %q:\n%s", tc.want, errOut)
			}
			if tc.code != 0 && out != "" {
				t.Errorf("a failed plan printed to stdout: %s", out)
			}
		})
	}
}

// TestExperimentsDirectory validates and plans every committed experiment file, in every
// format, so that an example never rots.
func TestExperimentsDirectory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "experiments", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no experiment files: %v", err)
	}
	const editorLine = "# yaml-language-server: $schema=../schema/experiment.schema.json\n"
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), editorLine) {
				t.Errorf("does not start with %q", editorLine)
			}
			out, errOut, code := runCmd(t, "validate", f)
			if code != 0 || !strings.Contains(out, ": ok (") {
				t.Fatalf("validate: exit %d\n%s%s", code, out, errOut)
			}
			for _, format := range plan.Formats() {
				out, errOut, code := runCmd(t, "plan", "--format", format, f)
				if code != 0 || out == "" {
					t.Errorf("plan --format %s: exit %d\n%s", format, code, errOut)
				}
			}
		})
	}
}
