package record

import "time"

// GPUSample is one reading of one GPU's state, as nvidia-smi reports it while a server runs. A
// nil pointer is a value nvidia-smi could not read ("[N/A]"), stored as an empty cell.
type GPUSample struct {
	Time        time.Time // when nvidia-smi took the sample, UTC
	ServerID    string    // the server config that was running
	GPU         int       // nvidia-smi's index of the GPU
	SMClockMHz  *int      // streaming multiprocessor clock
	MemClockMHz *int      // memory clock
	TempC       *int      // core temperature
	PowerW      *float64  // power draw
	PowerLimitW *float64  // the power limit in force
	UtilPct     *int      // share of the sample period a kernel was running
	MemUsedMiB  *int      // memory in use
	// Throttle names the clock-throttle (clock event) reasons active, in bit order, e.g.
	// "sw_power_cap", "hw_thermal_slowdown"; empty when none was.
	Throttle []string
}

// PowerOrThermal reports whether a reason that lowers clocks because of power or heat was
// active: a software power cap, a hardware slowdown, a software or hardware thermal slowdown,
// or a hardware power brake. Idle, application clock settings, sync boost and display clock
// settings are not: they lower clocks by design, not because the GPU is at a limit.
func (s GPUSample) PowerOrThermal() bool {
	for _, r := range s.Throttle {
		if PowerOrThermalReason(r) {
			return true
		}
	}
	return false
}

// PowerOrThermalReason reports whether the clock-throttle reason name is one of power or heat.
func PowerOrThermalReason(name string) bool {
	switch name {
	case "sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown":
		return true
	}
	return false
}
