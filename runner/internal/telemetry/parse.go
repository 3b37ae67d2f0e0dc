// Package telemetry samples the GPUs with nvidia-smi while a server runs, and joins the samples
// to the requests measured meanwhile: each request's mean SM clock, peak temperature, and
// whether a power or thermal clock-throttle reason was active during it.
//
// The sampler is one child process, `nvidia-smi --query-gpu=... --format=csv,noheader,nounits
// -lms 100`, whose lines are read as they come. No nvidia-smi, or one that lists no GPU, means
// no sampler and nothing to say; one that fails or stops answering costs the samples, never a
// request, and is described by one warning.
package telemetry

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// The two names of the active clock-throttle reasons field: drivers since 535 call them
// clock event reasons, and older ones only throttle reasons.
const (
	EventReasonsField    = "clocks_event_reasons.active"
	ThrottleReasonsField = "clocks_throttle_reasons.active"
)

// queryFields are the fields asked for, in the order parseLine reads them; the reasons field
// is appended.
const queryFields = "timestamp,index,clocks.sm,clocks.mem,temperature.gpu,power.draw,power.limit,utilization.gpu,memory.used"

// Query returns the --query-gpu argument with reasons as the name of the reasons field.
func Query(reasons string) string { return queryFields + "," + reasons }

// reasonBits names the bits of the clock-throttle reasons mask, as NVML defines them
// (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*), in bit order.
var reasonBits = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// DecodeReasons returns the names of the reasons set in mask, in bit order; a bit NVML has not
// named (yet) is kept as "bit_0x...".
func DecodeReasons(mask uint64) []string {
	var out []string
	known := uint64(0)
	for _, r := range reasonBits {
		known |= r.bit
		if mask&r.bit != 0 {
			out = append(out, r.name)
		}
	}
	for b := uint64(1); b != 0; b <<= 1 {
		if mask&b != 0 && known&b == 0 {
			out = append(out, fmt.Sprintf("bit_%#x", b))
		}
	}
	return out
}

// timeLayout is nvidia-smi's timestamp: local time, to the millisecond, with no zone. The
// sampler runs nvidia-smi with TZ=UTC, so that its local time is UTC.
const timeLayout = "2006/01/02 15:04:05.000"

// nfields is how many fields a sample line has.
const nfields = 10

// ParseLine reads one line of the sampler's output. A value nvidia-smi cannot read ("[N/A]",
// "[Not Supported]", "N/A") is left nil; a line that is not a sample (a message, a field
// count that does not match, an index or timestamp that does not parse) is an error. The
// timestamp is read in loc, the zone nvidia-smi prints in (UTC, as the sampler runs it).
func ParseLine(line string, loc *time.Location) (record.GPUSample, error) {
	var s record.GPUSample
	f := strings.Split(strings.TrimRight(line, "\r"), ",")
	if len(f) != nfields {
		return s, fmt.Errorf("%d fields, want %d", len(f), nfields)
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	t, err := time.ParseInLocation(timeLayout, f[0], loc)
	if err != nil {
		return s, fmt.Errorf("timestamp %q: not %s", f[0], timeLayout)
	}
	s.Time = t.UTC()
	if s.GPU, err = strconv.Atoi(f[1]); err != nil {
		return s, fmt.Errorf("gpu index %q: not an integer", f[1])
	}
	ints := []struct {
		dst **int
		v   string
	}{{&s.SMClockMHz, f[2]}, {&s.MemClockMHz, f[3]}, {&s.TempC, f[4]}, {&s.UtilPct, f[7]}, {&s.MemUsedMiB, f[8]}}
	for _, x := range ints {
		if n, err := strconv.Atoi(x.v); err == nil {
			*x.dst = &n
		} else if !unavailable(x.v) {
			return s, fmt.Errorf("value %q: not an integer", x.v)
		}
	}
	for _, x := range []struct {
		dst **float64
		v   string
	}{{&s.PowerW, f[5]}, {&s.PowerLimitW, f[6]}} {
		if v, err := strconv.ParseFloat(x.v, 64); err == nil {
			*x.dst = &v
		} else if !unavailable(x.v) {
			return s, fmt.Errorf("value %q: not a number", x.v)
		}
	}
	if !unavailable(f[9]) {
		mask, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(f[9]), "0x"), 16, 64)
		if err != nil {
			return s, fmt.Errorf("throttle reasons %q: not a hexadecimal mask", f[9])
		}
		s.Throttle = DecodeReasons(mask)
	}
	return s, nil
}

// unavailable reports whether a cell is nvidia-smi's way of saying it has no value.
func unavailable(v string) bool {
	return v == "" || strings.HasPrefix(v, "[") || strings.EqualFold(v, "N/A")
}
