package telemetry

import (
	"fmt"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// sampleView is a sample with its optional values spelled out, for comparing in tests.
type sampleView struct {
	time                                    time.Time
	gpu                                     int
	sm, mem, temp, power, limit, util, used string
	reasons                                 []string
	throttled                               bool
}

func view(s record.GPUSample) sampleView {
	i := func(p *int) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	f := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return sampleView{s.Time, s.GPU, i(s.SMClockMHz), i(s.MemClockMHz), i(s.TempC), f(s.PowerW), f(s.PowerLimitW),
		i(s.UtilPct), i(s.MemUsedMiB), s.Throttle, s.PowerOrThermal()}
}
