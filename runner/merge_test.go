package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// writeMergeShards writes the two shard folders of a run of a sweep of one server, split in
// two: shard 0 holds every config, shard 1 none. It also returns the sweep's config ids.
func writeMergeShards(t *testing.T, root string) (shards []string, ids []string) {
	t.Helper()
	b := resultstest.Sweep{Name: "merge-fixture", EngineVersion: "0.6.3", Prompts: []int{16, 64}, Outputs: []int{8},
		A: 20, B: 0.1, C0: 5, CP: 0.01, Chunk: []float64{1}, Seed: 3}.Builder(t)
	fingerprint := results.SHA256(b.Experiment.Source) + "/2"
	for _, c := range b.Configs {
		ids = append(ids, c.ID)
	}
	for i := range 2 {
		if i == 1 {
			b.Configs, b.Servers, b.Logs = nil, nil, nil
		}
		dir := b.WriteDir(t, filepath.Join(root, fmt.Sprintf("shard-%d", i)))
		var shardIDs []any
		for _, c := range b.Configs {
			shardIDs = append(shardIDs, c.ID)
		}
		resultstest.EditManifest(t, dir, func(m map[string]any) {
			m["shard"] = map[string]any{"index": i, "count": 2, "fingerprint": fingerprint, "configs": shardIDs,
				"source": "SLURM_ARRAY_TASK_ID", "host": fmt.Sprintf("node-%d", i)}
		})
		shards = append(shards, dir)
	}
	return shards, ids
}

// TestMergeCommand checks runner merge's exit statuses and what it prints, and that summary
// reads the merged folder.
func TestMergeCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards, ids := writeMergeShards(t, root)
	plain := resultstest.Sweep{Name: "merge-fixture", Prompts: []int{16}, Outputs: []int{8}, A: 20, Chunk: []float64{1}}.
		Builder(t).WriteDir(t, filepath.Join(root, "plain"))
	notEmpty := filepath.Join(root, "not-empty")
	if err := os.MkdirAll(notEmpty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string // the output folder is filled in for "{out}"
		code       int
		stdout     string
		stderr     []string
		wantFolder bool
		// readAsRun also reports and exports the merged folder, and diffs it against shard 0,
		// which holds every config.
		readAsRun bool
	}{
		{name: "merged", args: []string{"merge", "-o", "{out}", shards[1], shards[0]},
			stdout: "{out}: complete, 2 shards merged, 2 configs, 16 requests\n", wantFolder: true, readAsRun: true},
		{name: "flags after the folders", args: []string{"merge", shards[0], shards[1], "--partial", "-o", "{out}"},
			stdout: "{out}: complete, 2 shards merged, 2 configs, 16 requests\n", wantFolder: true},
		{name: "a missing shard", args: []string{"merge", "-o", "{out}", shards[1]}, code: 1,
			stderr: []string{"runner: merge: shard 0 of 2 is missing: no folder given holds it; its configs: " + ids[0] + " (prompt_tokens=16,max_tokens=8), " + ids[1]}},
		{name: "a missing shard, partial", args: []string{"merge", "--partial", "-o", "{out}", shards[1]},
			stdout: "{out}: incomplete, 1 shards merged, 0 configs, 0 requests\n", wantFolder: true,
			stderr: []string{"runner: merge: {out} is incomplete: it lacks " + ids[0] + ", " + ids[1] + "\n"}},
		{name: "not a shard and given twice", args: []string{"merge", "-o", "{out}", shards[0], plain, shards[0]}, code: 1,
			stderr: []string{"runner: merge: " + plain + ": not a shard folder",
				"\nrunner: merge: " + shards[0] + ": shard 0 of 2 is given twice (also " + shards[0] + ")\n"}},
		{name: "no output", args: []string{"merge", shards[0], shards[1]}, code: 2,
			stderr: []string{"runner: merge: -o OUT is required"}},
		{name: "no shards", args: []string{"merge", "-o", "{out}"}, code: 2,
			stderr: []string{"runner: merge: want the shard folders to merge"}},
		{name: "an output folder that is not empty", args: []string{"merge", "-o", notEmpty, shards[0], shards[1]}, code: 2,
			stderr: []string{"runner: merge: " + notEmpty + " cannot hold the merged folder: it exists and is not empty"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(root, fmt.Sprintf("merged-%d", i))
			args := make([]string, len(tt.args))
			for j, a := range tt.args {
				args[j] = strings.ReplaceAll(a, "{out}", out)
			}
			stdout, stderr, code := runCmd(t, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			if want := strings.ReplaceAll(tt.stdout, "{out}", out); stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
			for _, w := range tt.stderr {
				if w = strings.ReplaceAll(w, "{out}", out); !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tt.stderr == nil && stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
			_, err := os.Stat(out)
			if exists := err == nil; exists != tt.wantFolder {
				t.Fatalf("merged folder exists: %v, want %v", exists, tt.wantFolder)
			}
			if !tt.wantFolder {
				return
			}
			if _, stderr, code := runCmd(t, "summary", out); code != 0 {
				t.Errorf("summary of the merged folder: exit %d\n%s", code, stderr)
			}
			if !tt.readAsRun {
				return
			}
			for _, args := range [][]string{
				{"diff", "--strict", "--fail-on", "ttft_ms:+1%", shards[0], out},
				{"report", out, "-o", filepath.Join(root, "report")},
				{"export", "parquet", out, "-o", filepath.Join(root, "parquet")},
			} {
				if stdout, stderr, code := runCmd(t, args...); code != 0 {
					t.Errorf("runner %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
				}
			}
		})
	}
}
