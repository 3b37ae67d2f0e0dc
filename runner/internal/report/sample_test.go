package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// TestLargeFolderDrawsASample: a folder of more requests than a chart draws (2,400 requests of
// 17 events, 36,000 gaps) gets charts of bounded size, each saying in its caption how many of
// how many it drew, while a small folder's captions say nothing of the kind (the goldens).
func TestLargeFolderDrawsASample(t *testing.T) {
	sweep := resultstest.Sweep{Name: "large", Prompts: []int{64, 256}, Outputs: []int{16}, A: 12, B: 0.05, C0: 9, CP: 0.004,
		Chunk: []float64{1}, Seed: 8}
	b := sweep.Builder(t)
	b.Requests = func(experiment.Config) int { return 1 + 1 + 1200 }
	dir := b.Write(t, t.TempDir())
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Write(outDir(t, "large"), f)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4,000 of 4,800 points drawn: past 2,000 per series the chart draws an evenly spaced sample",
		"2,000 of 36,000 gaps drawn: past 1,000 per series",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("%s lacks %q", IndexFile, want)
		}
	}
	for name, most := range map[string]int{"decomposition": 2*maxScatter + 2, "itl_distribution": 0} {
		svg, err := os.ReadFile(filepath.Join(res.Dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(svg), "<circle"); n > most {
			t.Errorf("%s.svg draws %d points, want at most %d", name, n, most)
		}
		if len(svg) > 400_000 {
			t.Errorf("%s.svg is %d bytes, want at most 400,000", name, len(svg))
		}
	}
}
