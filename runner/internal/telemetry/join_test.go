package telemetry

import (
	"math"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

func TestJoin(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	smp := func(ms, gpu, clock, temp int, reasons ...string) record.GPUSample {
		return record.GPUSample{Time: at(ms), GPU: gpu, SMClockMHz: &clock, TempC: &temp, Throttle: reasons}
	}
	// One GPU sampled every 100 ms, with a power cap from 300 ms to 500 ms.
	one := []record.GPUSample{
		smp(0, 0, 2000, 60), smp(100, 0, 2000, 61), smp(200, 0, 2000, 62),
		smp(300, 0, 1400, 80, "sw_power_cap"), smp(400, 0, 1400, 84, "sw_power_cap", "sw_thermal_slowdown"),
		smp(500, 0, 2000, 70), smp(600, 0, 2000, 65, "gpu_idle"),
	}
	tests := []struct {
		name       string
		samples    []record.GPUSample
		start, end int
		clock      float64 // NaN: nil
		temp       float64
		throttled  *bool
	}{
		{"before the episode", one, 10, 250, 2000, 62, ptr(false)},
		{"inside the episode", one, 310, 390, 1400, 80, ptr(true)},
		{"ends as the episode begins", one, 150, 300, 2000, 80, ptr(true)},
		{"starts under a sample of the episode", one, 450, 480, 1400, 84, ptr(true)},
		{"half and half, time-weighted; the sample at the end counts for the peak", one, 200, 400, 1700, 84, ptr(true)},
		{"after the episode, idle is no throttle", one, 510, 690, 2000, 70, ptr(false)},
		{"no length: the sample in force", one, 250, 250, 2000, 62, ptr(false)},
		{"too long after the last sample", one, 5000, 5100, math.NaN(), math.NaN(), nil},
		{"before any sample", one, -500, -400, math.NaN(), math.NaN(), nil},
		{"no samples", nil, 0, 100, math.NaN(), math.NaN(), nil},
		{"two GPUs", []record.GPUSample{smp(0, 0, 2000, 60), smp(0, 1, 1000, 75, "hw_slowdown"), smp(100, 0, 2000, 60), smp(100, 1, 1000, 76)},
			10, 90, 1500, 75, ptr(true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Join(tc.samples, at(tc.start), at(tc.end), time.Second)
			checkFloat(t, "clock", got.SMClockMeanMHz, tc.clock)
			checkFloat(t, "temperature", got.TempMaxC, tc.temp)
			switch {
			case (got.Throttled == nil) != (tc.throttled == nil):
				t.Errorf("throttled %v, want %v", got.Throttled, tc.throttled)
			case got.Throttled != nil && *got.Throttled != *tc.throttled:
				t.Errorf("throttled %v, want %v", *got.Throttled, *tc.throttled)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func checkFloat(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	switch {
	case math.IsNaN(want) && got != nil:
		t.Errorf("%s %v, want none", what, *got)
	case !math.IsNaN(want) && got == nil:
		t.Errorf("%s none, want %v", what, want)
	case got != nil && math.Abs(*got-want) > 1e-6:
		t.Errorf("%s %v, want %v", what, *got, want)
	}
}
