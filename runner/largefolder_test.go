package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

// largeFolderEnv names the number of requests of BenchmarkLargeFolder's folder; the benchmark
// is skipped without it, since writing a folder of 300,000 requests takes minutes.
const largeFolderEnv = "RUNNER_LARGE_REQUESTS"

// largeBaselineEnv names another runner binary that BenchmarkLargeFolder also runs, for figures
// before and after a change.
const largeBaselineEnv = "RUNNER_LARGE_BASELINE"

// BenchmarkLargeFolder writes a valid folder of $RUNNER_LARGE_REQUESTS requests of 33 streamed
// events each on average (12 configs of a prompt × output sweep), then runs `runner summary`,
// `runner diff` (the folder against itself) and `runner report` on it as child processes and
// reports each one's peak resident memory, wall time and output bytes. Run it with `make
// bench-large`. The commands run once whatever b.N is: their figures are what matters, not
// a per-iteration time.
func BenchmarkLargeFolder(b *testing.B) {
	n, err := strconv.Atoi(os.Getenv(largeFolderEnv))
	if err != nil || n <= 0 {
		b.Skipf("set %s to the number of requests (e.g. 300000) to run", largeFolderEnv)
	}
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "runner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	start := time.Now()
	dir := largeFolder(b, filepath.Join(tmp, "results"), n)
	b.Logf("wrote %d requests to %s in %s (%s)", n, dir, time.Since(start).Round(time.Second), folderSize(b, dir))
	runtime.GC()
	debug.FreeOSMemory()
	b.Logf("this process holds %s resident when it starts the commands", vmRSS(b))
	bins := []struct{ suffix, path string }{{"", bin}}
	if base := os.Getenv(largeBaselineEnv); base != "" {
		bins = append(bins, struct{ suffix, path string }{"-baseline", base})
	}
	for _, bn := range bins {
		outDir := filepath.Join(tmp, "report"+bn.suffix)
		for _, c := range []struct {
			name string
			args []string
			out  string
		}{
			{"summary", []string{"summary", dir}, ""},
			{"diff", []string{"diff", dir, dir}, ""},
			{"report", []string{"report", dir, "-o", outDir}, outDir},
		} {
			runLarge(b, tmp, c.name+bn.suffix, bn.path, c.args, c.out)
		}
	}
}

// runLarge runs the runner binary bin with args as a child process and reports its peak
// resident memory, wall time and output bytes (stdout, and the files under out if set).
func runLarge(b *testing.B, tmp, name, bin string, args []string, outDir string) {
	b.Run(name, func(b *testing.B) {
		cmd := exec.Command(bin, args...)
		stdout, err := os.Create(filepath.Join(tmp, name+".out"))
		if err != nil {
			b.Fatal(err)
		}
		defer stdout.Close()
		cmd.Stdout, cmd.Stderr = stdout, os.Stderr
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// The child's own high-water mark, VmHWM, polled while it runs: ru_maxrss would count
		// this process's high-water mark, which the child shares until its exec.
		done := make(chan struct{})
		peak := make(chan float64)
		go func() {
			var kib float64
			for {
				kib = max(kib, vmHWM(cmd.Process.Pid))
				select {
				case <-done:
					peak <- kib
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		err = cmd.Wait()
		close(done)
		rss := <-peak / 1024
		if err != nil {
			b.Fatalf("runner %s: %v", name, err)
		}
		wall := time.Since(t0)
		info, _ := stdout.Stat()
		out := info.Size()
		line := fmt.Sprintf("runner %s: peak resident %.0f MiB, wall %s, stdout %d bytes", name, rss, wall.Round(10*time.Millisecond), out)
		if outDir != "" {
			line += ", " + filesOf(b, outDir)
		}
		b.Log(line)
		b.ReportMetric(rss, "peak-MiB")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(out), "stdout-bytes")
	})
}

// vmHWM returns the peak resident memory of the process pid in KiB, as /proc/PID/status says;
// 0 once it has exited.
func vmHWM(pid int) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kib
		}
	}
	return 0
}

// vmRSS returns this process's resident memory, as /proc/self/status says.
func vmRSS(b *testing.B) string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "an unknown amount"
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "an unknown amount"
}

// largeFolder writes a folder of n requests under root: a sweep of 4 prompt lengths × 3
// output lengths (16, 32 and 48 tokens, one token per event, so 33 events per request on
// average), its requests shared evenly among the 12 configs.
func largeFolder(b *testing.B, root string, n int) string {
	sweep := resultstest.Sweep{Name: "large", Prompts: []int{64, 128, 256, 512}, Outputs: []int{16, 32, 48},
		A: 12, B: 0.05, C0: 9, CP: 0.004, Chunk: []float64{1}, Seed: 3}
	builder := sweep.Builder(b)
	per := n / len(builder.Configs)
	builder.Requests = func(experiment.Config) int { return per }
	return builder.Write(b, root)
}

// folderSize returns the bytes under dir, in words.
func folderSize(b *testing.B, dir string) string {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		total += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("%.1f MB", float64(total)/1e6)
}

// filesOf lists the files under dir with their sizes, the largest SVG and index.html named.
func filesOf(b *testing.B, dir string) string {
	var total, html, svg int64
	var files int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		total += info.Size()
		switch {
		case d.Name() == "index.html":
			html = info.Size()
		case filepath.Ext(path) == ".svg":
			svg = max(svg, info.Size())
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(html), "index.html-bytes")
	b.ReportMetric(float64(svg), "largest-svg-bytes")
	return fmt.Sprintf("%d files, %.1f MB in all, index.html %.2f MB, largest SVG %.2f MB", files, float64(total)/1e6, float64(html)/1e6, float64(svg)/1e6)
}
