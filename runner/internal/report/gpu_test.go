package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
	"github.com/onelayerdown/runner/runner/internal/telemetry"
)

// TestReportGPUTelemetry draws the GPU chart for a folder with telemetry.csv, after the other
// charts, and neither draws nor mentions it for the same folder without one.
func TestReportGPUTelemetry(t *testing.T) {
	m := resultstest.Sweep{EngineVersion: "0.6.3", Prompts: []int{128, 512}, Outputs: []int{16, 32},
		A: 20, B: 0.05, C0: 9, CP: 0.002, Chunk: []float64{1}, Seed: 3}
	dir := m.Write(t, t.TempDir())

	out := outDir(t, "no-gpu")
	res, err := Write(out, load(t, dir)...)
	if err != nil {
		t.Fatal(err)
	}
	page := checkReport(t, res, untimedCharts())
	if strings.Contains(page, "gpu_telemetry") || strings.Contains(page, "GPU clock") {
		t.Errorf("the page of a run without a GPU mentions the GPU chart")
	}

	// The same folder, as if a GPU had been sampled: a power cap in the middle of the run.
	reqs, err := results.ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, last := reqs[0].Start, reqs[len(reqs)-1].Start
	file, err := os.Create(filepath.Join(dir, results.TelemetryFile))
	if err != nil {
		t.Fatal(err)
	}
	e := results.TelemetryCSV.NewEncoder(file)
	mid := first.Add(last.Sub(first) / 2)
	var samples []record.GPUSample
	for at := first.Add(-time.Second); at.Before(last.Add(time.Second)); at = at.Add(100 * time.Millisecond) {
		clock, temp := 1980, 62
		s := record.GPUSample{Time: at, ServerID: reqs[0].ServerID, SMClockMHz: &clock, TempC: &temp}
		if d := at.Sub(mid); d > -time.Second && d < time.Second {
			clock, temp, s.Throttle = 1410, 84, []string{"sw_power_cap"}
		}
		if err := e.Encode(&s); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	file.Close()
	// Each request described by the samples over its span, as the run joins them.
	file, err = os.Create(filepath.Join(dir, results.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	re := results.RequestsCSV.NewEncoder(file)
	for i := range reqs {
		q := &reqs[i]
		if q.E2E != nil {
			sp := telemetry.Join(samples, q.Start, q.Start.Add(*q.E2E), time.Second)
			q.GPUSMClockMeanMHz, q.GPUTempMaxC, q.GPUThrottled = sp.SMClockMeanMHz, sp.TempMaxC, sp.Throttled
		}
		if err := re.Encode(q); err != nil {
			t.Fatal(err)
		}
	}
	file.Close()
	out = outDir(t, "gpu")
	res, err = Write(out, load(t, dir)...)
	if err != nil {
		t.Fatal(err)
	}
	page = checkReport(t, res, append(untimedCharts(), "gpu_telemetry"))
	for _, w := range []string{"GPU clock and temperature", "telemetry.csv", "vermillion where power or thermal throttling",
		"overlapped it (" /* some of the requests */} {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", IndexFile, w)
		}
	}
}
