package telemetry

import (
	"sort"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Span is what the samples say about one time span (a request's t0 to its end): the mean SM
// clock, the peak temperature, and whether a power or thermal throttle reason was active. Each
// is nil when no sample describes the span.
type Span struct {
	SMClockMeanMHz *float64
	TempMaxC       *float64
	Throttled      *bool
}

// Join describes the span from start to end with samples (in time order, several GPUs
// interleaved). A sample stands for the GPU's state from its time until the next sample of the
// same GPU, and for at most maxAge: so the span is described by the sample in force at its
// start (the nearest before it, when not older than maxAge) and every sample taken inside it.
// The SM clock is the mean over the span weighted by how long each sample stood for it, over
// every GPU; the temperature the highest of those samples; throttled is true when any of them
// had a power or thermal reason active. A span of no length (or one covered only by instants)
// takes the plain mean of its samples' clocks.
func Join(samples []record.GPUSample, start, end time.Time, maxAge time.Duration) Span {
	if end.Before(start) {
		end = start
	}
	// Samples are appended as they arrive, so they are in time order; the first sample that can
	// be in force at start is at most maxAge before it.
	lo := sort.Search(len(samples), func(i int) bool { return !samples[i].Time.Before(start.Add(-maxAge)) })
	hi := sort.Search(len(samples), func(i int) bool { return samples[i].Time.After(end) })
	type seg struct {
		s      *record.GPUSample
		weight time.Duration
	}
	byGPU := map[int][]*record.GPUSample{}
	var gpus []int
	for i := lo; i < hi; i++ {
		s := &samples[i]
		if _, ok := byGPU[s.GPU]; !ok {
			gpus = append(gpus, s.GPU)
		}
		byGPU[s.GPU] = append(byGPU[s.GPU], s)
	}
	var segs []seg
	for _, g := range gpus {
		ss := byGPU[g]
		// Keep the last sample at or before start and every one after it.
		first := 0
		for i, s := range ss {
			if !s.Time.After(start) {
				first = i
			}
		}
		for i := first; i < len(ss); i++ {
			s := ss[i]
			from := maxTime(s.Time, start)
			to := minTime(end, s.Time.Add(maxAge))
			if i+1 < len(ss) {
				to = minTime(to, ss[i+1].Time)
			}
			w := to.Sub(from)
			if w < 0 {
				w = 0
			}
			segs = append(segs, seg{s, w})
		}
	}
	var out Span
	if len(segs) == 0 {
		return out
	}
	var sum, total float64
	var plain float64
	var nplain int
	var temp float64
	hasTemp, throttled := false, false
	for _, sg := range segs {
		if c := sg.s.SMClockMHz; c != nil {
			sum += float64(*c) * sg.weight.Seconds()
			total += sg.weight.Seconds()
			plain += float64(*c)
			nplain++
		}
		if t := sg.s.TempC; t != nil && (!hasTemp || float64(*t) > temp) {
			temp, hasTemp = float64(*t), true
		}
		throttled = throttled || sg.s.PowerOrThermal()
	}
	switch {
	case total > 0:
		m := sum / total
		out.SMClockMeanMHz = &m
	case nplain > 0:
		m := plain / float64(nplain)
		out.SMClockMeanMHz = &m
	}
	if hasTemp {
		out.TempMaxC = &temp
	}
	out.Throttled = &throttled
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
