package telemetry

import (
	"reflect"
	"testing"
	"time"
)

func TestDecodeReasons(t *testing.T) {
	tests := []struct {
		mask uint64
		want []string
	}{
		{0, nil},
		{0x1, []string{"gpu_idle"}},
		{0x4, []string{"sw_power_cap"}},
		{0x24, []string{"sw_power_cap", "sw_thermal_slowdown"}},
		{0x8 | 0x40 | 0x80, []string{"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}},
		{0x10 | 0x100, []string{"sync_boost", "display_clock_setting"}},
		{0x1000, []string{"bit_0x1000"}},
	}
	for _, tc := range tests {
		if got := DecodeReasons(tc.mask); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DecodeReasons(%#x) = %q, want %q", tc.mask, got, tc.want)
		}
	}
}

func TestParseLine(t *testing.T) {
	utc := time.UTC
	tests := []struct {
		name, line string
		wantErr    bool
		check      func(t *testing.T, s sampleView)
	}{
		{name: "full", line: "2025/03/04 05:06:07.890, 1, 1410, 2619, 84, 700.00, 700.00, 100, 71234, 0x0000000000000024",
			check: func(t *testing.T, s sampleView) {
				want := sampleView{time.Date(2025, 3, 4, 5, 6, 7, 890e6, utc), 1, "1410", "2619", "84", "700", "700", "100", "71234", []string{"sw_power_cap", "sw_thermal_slowdown"}, true}
				if !reflect.DeepEqual(s, want) {
					t.Errorf("got %+v\nwant %+v", s, want)
				}
			}},
		{name: "not available", line: "2025/03/04 05:06:07.890, 0, 585, [N/A], 40, [N/A], [Not Supported], 0, 1, [N/A]",
			check: func(t *testing.T, s sampleView) {
				if s.mem != "nil" || s.power != "nil" || s.limit != "nil" || s.reasons != nil || s.throttled {
					t.Errorf("got %+v, want the unavailable values nil", s)
				}
			}},
		{name: "idle is no throttle", line: "2025/03/04 05:06:07.890, 0, 210, 405, 30, 20.5, 70.0, 0, 0, 0x1",
			check: func(t *testing.T, s sampleView) {
				if s.throttled {
					t.Errorf("gpu_idle counted as power or thermal throttling")
				}
			}},
		{name: "message", line: "No devices were found", wantErr: true},
		{name: "bad timestamp", line: "yesterday, 0, 1, 1, 1, 1, 1, 1, 1, 0x0", wantErr: true},
		{name: "bad index", line: "2025/03/04 05:06:07.890, x, 1, 1, 1, 1, 1, 1, 1, 0x0", wantErr: true},
		{name: "bad clock", line: "2025/03/04 05:06:07.890, 0, fast, 1, 1, 1, 1, 1, 1, 0x0", wantErr: true},
		{name: "bad power", line: "2025/03/04 05:06:07.890, 0, 1, 1, 1, lots, 1, 1, 1, 0x0", wantErr: true},
		{name: "bad mask", line: "2025/03/04 05:06:07.890, 0, 1, 1, 1, 1, 1, 1, 1, 0xzz", wantErr: true},
		{name: "too few fields", line: "2025/03/04 05:06:07.890, 0, 1", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseLine(tc.line, utc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseLine(%q) error %v, want error %v", tc.line, err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, view(s))
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("2025/03/04 05:06:07.890, 1, 1410, 2619, 84, 700.00, 700.00, 100, 71234, 0x0000000000000024")
	f.Add("2025/03/04 05:06:07.890, 0, 585, [N/A], 40, [N/A], [Not Supported], 0, 1, [N/A]")
	f.Add("No devices were found")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseLine(line, time.UTC)
		if err != nil {
			return
		}
		if s.Time.Location() != time.UTC {
			t.Errorf("time %v not in UTC", s.Time)
		}
		for _, r := range s.Throttle {
			if r == "" {
				t.Errorf("empty reason name in %q", s.Throttle)
			}
		}
	})
}
