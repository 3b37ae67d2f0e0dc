package main

import (
	"strings"
	"testing"
)

func TestExportSchedulers(t *testing.T) {
	const file = "../experiments/prefill-sweep.yaml"
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a line the output holds
		stderr string // what stderr holds
	}{
		{"kubernetes", []string{"export", "kubernetes", file, "--shards", "4", "--image", "runner:1", "--node-selector", "nvidia.com/gpu.product=Tesla-T4"},
			0, "  completionMode: Indexed\n", "3 of the 4 shards will run nothing"},
		{"slurm", []string{"export", "slurm", file, "--shards", "2", "--partition", "t4"},
			0, "#SBATCH --array=0-1\n", "1 of the 2 shards will run nothing"},
		{"kubernetes no shards", []string{"export", "kubernetes", file, "--shards", "0", "--image", "runner:1"},
			2, "", "export kubernetes: --shards must be at least 1, got 0"},
		{"kubernetes shards missing", []string{"export", "kubernetes", file, "--image", "runner:1"},
			2, "", "--shards must be at least 1, got 0"},
		{"kubernetes no image", []string{"export", "kubernetes", file, "--shards", "2"},
			2, "", "export kubernetes: --image is required"},
		{"node selector without =", []string{"export", "kubernetes", file, "--shards", "2", "--image", "runner:1", "--node-selector", "gpu"},
			2, "", `invalid value "gpu" for flag -node-selector: want KEY=VALUE, got "gpu"`},
		{"node selector bad value", []string{"export", "kubernetes", file, "--shards", "2", "--image", "runner:1", "--node-selector", "gpu=Tesla T4"},
			2, "", "--node-selector gpu=Tesla T4: a valid label must"},
		{"node selector twice", []string{"export", "kubernetes", file, "--shards", "2", "--image", "runner:1", "--node-selector", "a=1", "--node-selector", "a=2"},
			2, "", "label a given twice (1 and 2)"},
		{"slurm no shards", []string{"export", "slurm", file, "--shards", "0"},
			2, "", "export slurm: --shards must be at least 1, got 0"},
		{"kubernetes more shards than the bound", []string{"export", "kubernetes", file, "--shards", "100000000", "--image", "runner:1"},
			2, "", "export kubernetes: --shards 100000000: the shard count 100000000 is more than 10000"},
		{"slurm more shards than the bound", []string{"export", "slurm", file, "--shards", "20000"},
			2, "", "export slurm: --shards 20000: the shard count 20000 is more than 10000"},
		{"no file", []string{"export", "slurm", "--shards", "2"},
			2, "", "export slurm: want exactly one experiment file, got 0"},
		{"missing file", []string{"export", "kubernetes", "nope.yaml", "--shards", "2", "--image", "runner:1"},
			2, "", "nope.yaml"},
		{"unknown format", []string{"export", "nomad", file},
			2, "", `export: unknown format "nomad": want parquet, kubernetes or slurm`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, c.code, errOut)
			}
			if !strings.Contains(out, c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, out)
			}
			if !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr lacks %q:\n%s", c.stderr, errOut)
			}
			if c.code != 0 && out != "" {
				t.Errorf("printed manifests on a refusal:\n%s", out)
			}
		})
	}
}
