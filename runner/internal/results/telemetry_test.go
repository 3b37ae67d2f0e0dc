package results

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// testSamples returns GPU samples every 100 ms, with a power cap and thermal slowdown in the
// third and a value nvidia-smi could not read in the fourth.
func testSamples() []record.GPUSample {
	t0 := time.Date(2026, 11, 29, 8, 12, 0, 123e6, time.UTC)
	i := func(n int) *int { return &n }
	f := func(x float64) *float64 { return &x }
	var out []record.GPUSample
	for k := range 4 {
		s := record.GPUSample{Time: t0.Add(time.Duration(k) * 100 * time.Millisecond), ServerID: "s0-77aa", GPU: k % 2,
			SMClockMHz: i(1980), MemClockMHz: i(2619), TempC: i(60 + k), PowerW: f(212.25), PowerLimitW: f(700),
			UtilPct: i(97), MemUsedMiB: i(71234)}
		switch k {
		case 1:
			s.Throttle = []string{"gpu_idle"}
		case 2:
			s.SMClockMHz, s.Throttle = i(1410), []string{"sw_power_cap", "sw_thermal_slowdown"}
		case 3:
			s.PowerW, s.MemClockMHz = nil, nil
		}
		out = append(out, s)
	}
	return out
}

func TestTelemetryFile(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	dir := f.Dir()
	// writeFolder closed it; a folder without samples has no telemetry.csv and no resource.
	if hasFile(dir, TelemetryFile) {
		t.Fatal("a folder without GPU samples has telemetry.csv")
	}
	files, err := ReadSchema(dir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(files, func(s FileSchema) bool { return s.File == TelemetryFile }) {
		t.Error("datapackage.json names telemetry.csv in a folder without it")
	}

	exp, configs := testExperiment()
	g, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	want := testSamples()
	if err := g.AppendTelemetry(want[:2]); err != nil {
		t.Fatal(err)
	}
	if err := g.AppendTelemetry(nil); err != nil {
		t.Fatal(err)
	}
	if err := g.AppendTelemetry(want[2:]); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(g.Dir(), TelemetryFile))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "telemetry.csv", b)
	r, err := Open(g.Dir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("telemetry.csv reads back as\n%+v\nwant\n%+v", got, want)
	}
	files, err = ReadSchema(g.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(files, func(s FileSchema) bool { return s.File == TelemetryFile }); i < 0 || !reflect.DeepEqual(files[i].Columns, TelemetryCSV.Columns()) {
		t.Errorf("datapackage.json lacks telemetry.csv with its columns: %+v", files)
	}
	if s := r.Schema(); s[len(s)-1].File != TelemetryFile {
		t.Errorf("Reader.Schema lacks telemetry.csv: %+v", s)
	}
	// A folder without the file reads no samples, and no error.
	r0, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r0.Telemetry(); got != nil || err != nil {
		t.Errorf("Telemetry of a folder without it = %v, %v", got, err)
	}
}

// TestResumeTelemetryTornLine resumes a folder whose writer died in the middle of a
// telemetry.csv row: the torn row is dropped, and the resumed run's samples follow the whole
// ones under the one header.
func TestResumeTelemetryTornLine(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	s := testSamples()
	if err := f.AppendTelemetry(s[:2]); err != nil {
		t.Fatal(err)
	}
	f.abandon()
	path := filepath.Join(dir, TelemetryFile)
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteString("1,2026-11-29T08:12:00.3")
	file.Close()

	g, _, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AppendTelemetry(s[2:]); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("schema_version")); n != 1 {
		t.Errorf("telemetry.csv has %d headers:\n%s", n, b)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("after the resume telemetry.csv holds\n%s", strings.TrimSpace(string(b)))
	}
}
