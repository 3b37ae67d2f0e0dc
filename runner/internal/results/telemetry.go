package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

type gpuSample = record.GPUSample

// TelemetryCSV is telemetry.csv: one row per GPU per sample, in the order the samples were
// taken, written only where a GPU was sampled.
var TelemetryCSV = &Table[gpuSample]{file: TelemetryFile, optional: true, cols: []column[gpuSample]{
	timeCol("time", func(s *gpuSample) *time.Time { return &s.Time }),
	strCol("server_id", func(s *gpuSample) *string { return &s.ServerID }),
	intCol("gpu_index", func(s *gpuSample) *int { return &s.GPU }),
	optIntCol("sm_clock_mhz", func(s *gpuSample) **int { return &s.SMClockMHz }),
	optIntCol("mem_clock_mhz", func(s *gpuSample) **int { return &s.MemClockMHz }),
	optIntCol("temperature_c", func(s *gpuSample) **int { return &s.TempC }),
	optFloatCol("power_draw_w", 2, func(s *gpuSample) **float64 { return &s.PowerW }),
	optFloatCol("power_limit_w", 2, func(s *gpuSample) **float64 { return &s.PowerLimitW }),
	optIntCol("utilization_pct", func(s *gpuSample) **int { return &s.UtilPct }),
	optIntCol("memory_used_mib", func(s *gpuSample) **int { return &s.MemUsedMiB }),
	listCol("throttle_reasons", func(s *gpuSample) *[]string { return &s.Throttle }),
}}

// AppendTelemetry appends GPU samples to telemetry.csv, creating it with its header on the
// first samples: a run that sampled no GPU has no telemetry.csv. The samples go in one write.
func (f *Folder) AppendTelemetry(samples []record.GPUSample) error {
	if len(samples) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return errors.New("append telemetry: folder is closed")
	case f.err != nil:
		return fmt.Errorf("append telemetry: an earlier write failed: %w", f.err)
	}
	if f.telemetry == nil {
		path := filepath.Join(f.dir, TelemetryFile)
		file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("append telemetry: %w", err)
		}
		st, err := file.Stat()
		if err == nil && st.Size() == 0 {
			_, err = file.Write(encodeCSV(TelemetryCSV.header()))
		}
		if err != nil {
			file.Close()
			return fmt.Errorf("append telemetry: %w", err)
		}
		f.telemetry = file
	}
	rows := make([][]string, len(samples))
	for i := range samples {
		rows[i] = TelemetryCSV.row(&samples[i])
	}
	return f.write(f.telemetry, TelemetryFile, encodeCSV(rows...))
}

// repairTelemetry drops a torn last line of telemetry.csv, where the folder has the file, so
// that a resumed run appends whole rows.
func (f *Folder) repairTelemetry() error {
	if !hasFile(f.dir, TelemetryFile) {
		return nil
	}
	return filterFile(f.dir, TelemetryFile, TelemetryCSV.header(), TelemetryCSV.NewScanner, func(record.GPUSample) bool { return true })
}

// Telemetry returns the rows of telemetry.csv; nil, and no error, for a folder without GPU
// samples.
func (r *Reader) Telemetry() ([]record.GPUSample, error) {
	var rows []record.GPUSample
	err := scanOptional(r, TelemetryFile, TelemetryCSV.NewScanner, func(s record.GPUSample, _ int) error {
		rows = append(rows, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
