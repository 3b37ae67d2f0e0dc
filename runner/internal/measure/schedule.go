package measure

import (
	"iter"
	"math/bits"
	"sort"

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

// ScheduleVersion names the algorithm of the shuffled order. Folders record it, so that a
// resume never mixes two shuffles of one seed: the same seed gives another order under another
// version, and the repetition numbers of the rows would no longer match.
const ScheduleVersion = "feistel-1"

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
//
// The schedule is generated as it is consumed: its memory is proportional to the number of
// configs, never to the number of requests, so a large repetition count costs nothing until the
// requests are sent, and a caller can stop between any two jobs. Every iteration yields the same
// jobs in the same order.
func Schedule(counts []Counts, mode string, seed int64) iter.Seq[Job] {
	return func(yield func(Job) bool) {
		if len(counts) == 0 {
			return
		}
		seq := make([]int, len(counts))
		emit := func(c int, phase record.Phase, rep int) bool {
			j := Job{Config: c, Phase: phase, Rep: rep, Seq: seq[c]}
			seq[c]++
			return yield(j)
		}
		if !emit(0, record.PhaseFirst, 0) {
			return
		}
		for c, n := range counts {
			for r := 0; r < n.Warmup; r++ {
				if !emit(c, record.PhaseWarmup, r) {
					return
				}
			}
		}
		// Seq numbers follow the order in which requests are sent, so a config's rows read in
		// order.
		switch mode {
		case "interleaved":
			most := 0
			for _, n := range counts {
				most = max(most, n.Repetitions)
			}
			for r := 0; r < most; r++ {
				for c, n := range counts {
					if r < n.Repetitions && !emit(c, record.PhaseMeasure, r) {
						return
					}
				}
			}
		case "shuffled":
			// The measured requests, numbered in sequential order, are visited through a
			// seeded permutation of their numbers, computed one number at a time.
			// Validation bounds the totals (experiment.MaxRequests), so this sum cannot
			// overflow.
			ends := make([]int, len(counts)) // ends[c]: one past config c's last number
			total := 0
			for c, n := range counts {
				total += max(n.Repetitions, 0)
				ends[c] = total
			}
			p := newPermutation(total, seed)
			for i := range p.domain {
				k := p.at(i)
				if k >= total {
					continue // outside [0, total): the walk skips it
				}
				c := sort.SearchInts(ends, k+1)
				start := 0
				if c > 0 {
					start = ends[c-1]
				}
				if !emit(c, record.PhaseMeasure, k-start) {
					return
				}
			}
		default: // sequential
			for c, n := range counts {
				for r := 0; r < n.Repetitions; r++ {
					if !emit(c, record.PhaseMeasure, r) {
						return
					}
				}
			}
		}
	}
}

// permutation is a bijection of [0, domain) drawn from a seed: a balanced Feistel network over
// an even number of bits, with domain the smallest such power of two that holds n numbers.
// Numbers at or above n are skipped by the caller (a cycle walk over the whole domain), so every
// number below n is visited exactly once, and the domain is less than four times n.
type permutation struct {
	domain   int
	halfBits uint
	mask     uint64
	keys     [6]uint64
}

func newPermutation(n int, seed int64) permutation {
	need := uint(bits.Len64(uint64(max(n-1, 1))))
	half := (need + 1) / 2
	p := permutation{domain: 1 << (2 * half), halfBits: half, mask: 1<<half - 1}
	// The round keys follow from the seed through splitmix64, so the same seed gives the same
	// order on any machine.
	x := uint64(seed) ^ 0x72756e6e6572 // "runner"
	for i := range p.keys {
		x += 0x9e3779b97f4a7c15
		p.keys[i] = mix64(x)
	}
	return p
}

// at returns the image of i, for i in [0, domain).
func (p permutation) at(i int) int {
	l, r := uint64(i)>>p.halfBits, uint64(i)&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix64(r^k)&p.mask)
	}
	return int(l<<p.halfBits | r)
}

// mix64 is splitmix64's finaliser: a fast, well-mixing bijection of 64-bit words.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
