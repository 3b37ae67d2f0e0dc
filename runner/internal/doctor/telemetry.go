package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/onelayerdown/runner/runner/internal/telemetry"
)

// The telemetry check samples at the run's interval and watches the samples arrive: wanted
// samples in at least wantPolls separate polls. A nvidia-smi whose output is buffered when piped
// delivers nothing for seconds and then a burst, which the run would join to the wrong requests.
const (
	telemetryPoll = 50 * time.Millisecond
	wantSamples   = 5
	wantPolls     = 3
	// clockSkew is how far a sample's timestamp may be from the moment it arrived: more means
	// the timestamps are read in the wrong time zone, and no sample joins a request.
	clockSkew = time.Minute
)

// gpuWithout is what a run loses without GPU samples.
const gpuWithout = "gpu_sm_clock_mean_mhz, gpu_temp_max_c and gpu_throttled stay empty"

// checkTelemetry runs the sampler the run uses, where nvidia-smi is found, and checks the
// throttle-reason field it settled on, that samples arrive as they are taken, and that their
// timestamps parse and match the clock. Without nvidia-smi there is nothing to check.
func checkTelemetry(ctx context.Context, o Options) []Check {
	path := o.NvidiaSMI
	if path == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return []Check{{Name: "nvidia-smi", Result: Skipped, Detail: "not on the PATH: no GPU to sample", Without: gpuWithout}}
		}
		path = p
	}
	window := o.TelemetryWindow
	if window <= 0 {
		window = 5 * time.Second
	}
	s := telemetry.Start(ctx, telemetry.Options{Path: path, ServerID: "doctor", Stall: window})
	if s == nil {
		return []Check{{Name: "nvidia-smi", Result: Skipped, Detail: path + " lists no GPU", Without: gpuWithout}}
	}
	defer s.Stop()
	reasons := Check{Name: "throttle reasons"}
	if f := s.ReasonsField(); f != "" {
		reasons.Result, reasons.Detail = OK, "asked as "+f
	} else {
		reasons.Result, reasons.Detail = Missing, "nvidia-smi answered neither "+telemetry.EventReasonsField+" nor "+telemetry.ThrottleReasonsField+": "+s.Warning()
		reasons.Without = gpuWithout
		return []Check{reasons}
	}
	samples, polls, skew := watch(ctx, s, window)
	s.Stop()
	bad, first := s.BadLines()
	return []Check{reasons, piped(samples, polls, window), timestamps(samples, skew, bad, first)}
}

// watch drains s every telemetryPoll until wantSamples have come in wantPolls polls, or window
// has passed, and returns the samples, how many polls brought some, and the largest gap between
// a sample's timestamp and the moment it was drained.
func watch(ctx context.Context, s *telemetry.Sampler, window time.Duration) (n, polls int, skew time.Duration) {
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	tick := time.NewTicker(telemetryPoll)
	defer tick.Stop()
	for n < wantSamples || polls < wantPolls {
		select {
		case <-ctx.Done():
			return n, polls, skew
		case <-deadline.C:
			return n, polls, skew
		case <-tick.C:
		}
		got := s.Drain()
		now := time.Now()
		if len(got) > 0 {
			polls++
		}
		for _, smp := range got {
			n++
			skew = max(skew, now.Sub(smp.Time).Abs())
		}
	}
	return n, polls, skew
}

// piped checks that samples arrived one by one as nvidia-smi took them.
func piped(samples, polls int, window time.Duration) Check {
	c := Check{Name: "samples as taken"}
	if samples >= wantSamples && polls >= wantPolls {
		c.Result, c.Detail = OK, fmt.Sprintf("%d samples arrived in %d separate reads", samples, polls)
		return c
	}
	c.Result = Missing
	c.Detail = fmt.Sprintf("%d samples in %d reads within %s, want %d in %d: nvidia-smi's piped output is buffered or stalls", samples, polls, window, wantSamples, wantPolls)
	c.Without = gpuWithout + " or are joined to samples taken outside the request"
	return c
}

// timestamps checks that every line was a sample whose timestamp parsed, close to the clock.
func timestamps(samples int, skew time.Duration, bad int, first string) Check {
	c := Check{Name: "timestamps"}
	switch {
	case bad > 0:
		c.Result, c.Detail = Missing, fmt.Sprintf("%d lines were not samples, the first %s", bad, first)
	case samples == 0:
		c.Result, c.Detail = Skipped, "no sample arrived to read a timestamp from"
	case skew > clockSkew:
		c.Result, c.Detail = Missing, fmt.Sprintf("the timestamps are %s from the clock: read in the wrong time zone", skew.Round(time.Second))
	default:
		c.Result, c.Detail = OK, fmt.Sprintf("parse, within %s of the clock", skew.Round(time.Millisecond))
		return c
	}
	c.Without = gpuWithout
	return c
}
