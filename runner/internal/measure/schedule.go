package measure

import (
	"math/rand/v2"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Job is one request to send: which config, in which phase, and its position in that config's
// sequence of requests.
type Job struct {
	Config int // index into the configs passed to Schedule
	Phase  record.Phase
	Rep    int // repetition number within its phase, from 0
	Seq    int // position within the config across all phases, from 0
}

// Counts says how many requests each config gets: warm-up and measured repetitions.
type Counts struct {
	Warmup      int
	Repetitions int
}

// Schedule orders the requests of the configs that share one server boot.
//
// The first request after the boot is an extra request of the first config, in phase first: it
// pays for the server's lazy initialisation and is kept apart from the steady state. Then every
// config's warm-up requests run, config by config. The measured repetitions follow in the given
// mode:
//
//   - sequential: all repetitions of one config, then the next config;
//   - interleaved: repetition 0 of every config, then repetition 1 of every config, and so on, so
//     that a slow drift of the machine spreads evenly over the configs;
//   - shuffled: all (config, repetition) pairs in a random order drawn from seed.
func Schedule(counts []Counts, mode string, seed int64) []Job {
	if len(counts) == 0 {
		return nil
	}
	seq := make([]int, len(counts))
	next := func(c int, phase record.Phase, rep int) Job {
		j := Job{Config: c, Phase: phase, Rep: rep, Seq: seq[c]}
		seq[c]++
		return j
	}
	jobs := []Job{next(0, record.PhaseFirst, 0)}
	for c, n := range counts {
		for r := 0; r < n.Warmup; r++ {
			jobs = append(jobs, next(c, record.PhaseWarmup, r))
		}
	}
	var measured []Job
	switch mode {
	case "interleaved":
		for r := 0; ; r++ {
			added := false
			for c, n := range counts {
				if r < n.Repetitions {
					measured = append(measured, Job{Config: c, Phase: record.PhaseMeasure, Rep: r})
					added = true
				}
			}
			if !added {
				break
			}
		}
	default: // sequential and shuffled start from the sequential order
		for c, n := range counts {
			for r := 0; r < n.Repetitions; r++ {
				measured = append(measured, Job{Config: c, Phase: record.PhaseMeasure, Rep: r})
			}
		}
		if mode == "shuffled" {
			rng := rand.New(rand.NewPCG(uint64(seed), 0x72756e6e6572)) // "runner"
			rng.Shuffle(len(measured), func(i, j int) { measured[i], measured[j] = measured[j], measured[i] })
		}
	}
	// Seq numbers follow the order in which requests are sent, so a config's rows read in order.
	for _, j := range measured {
		jobs = append(jobs, next(j.Config, j.Phase, j.Rep))
	}
	return jobs
}
