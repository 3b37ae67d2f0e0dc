package measure

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// render writes jobs as "c0:first0 c0:warmup0 c1:measure0 ..." for comparison.
func render(jobs []Job) string {
	var b strings.Builder
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "c%d:%s%d", j.Config, j.Phase, j.Rep)
	}
	return b.String()
}

func TestSchedule(t *testing.T) {
	counts := []Counts{{Warmup: 1, Repetitions: 2}, {Warmup: 0, Repetitions: 3}}
	tests := []struct {
		mode string
		want string
	}{
		{"sequential", "c0:first0 c0:warmup0 c0:measure0 c0:measure1 c1:measure0 c1:measure1 c1:measure2"},
		{"interleaved", "c0:first0 c0:warmup0 c0:measure0 c1:measure0 c0:measure1 c1:measure1 c1:measure2"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			if got := render(slices.Collect(Schedule(counts, tt.mode, 0))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestScheduleShuffled(t *testing.T) {
	counts := []Counts{{Warmup: 1, Repetitions: 10}, {Warmup: 1, Repetitions: 10}, {Warmup: 1, Repetitions: 10}}
	a := slices.Collect(Schedule(counts, "shuffled", 7))
	b := slices.Collect(Schedule(counts, "shuffled", 7))
	c := slices.Collect(Schedule(counts, "shuffled", 8))
	if render(a) != render(b) {
		t.Fatal("the same seed gave two orders")
	}
	if render(a) == render(c) {
		t.Fatal("two seeds gave the same order of 30 requests")
	}
	// The same multiset of requests as the sequential order, warm-ups first.
	seqOrder := slices.Collect(Schedule(counts, "sequential", 0))
	key := func(js []Job) []string {
		var s []string
		for _, j := range js {
			s = append(s, fmt.Sprintf("c%d:%s%d", j.Config, j.Phase, j.Rep))
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(key(a), key(seqOrder)) {
		t.Fatal("shuffled order does not hold the same requests as sequential")
	}
	if render(a[:4]) != "c0:first0 c0:warmup0 c1:warmup0 c2:warmup0" {
		t.Fatalf("first and warm-up requests must come first: %s", render(a[:4]))
	}
	// Seq numbers count up per config in send order.
	next := map[int]int{}
	for _, j := range a {
		if j.Seq != next[j.Config] {
			t.Fatalf("config %d: seq %d, want %d", j.Config, j.Seq, next[j.Config])
		}
		next[j.Config]++
	}
}

// TestScheduleShuffledIsPermutation checks, for sizes around the powers of two where the
// permutation's domain changes, that every measured request comes exactly once.
func TestScheduleShuffledIsPermutation(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4097} {
		counts := []Counts{{Repetitions: n / 3}, {Repetitions: n - n/3 - n/4}, {Repetitions: n / 4}}
		seen := map[[2]int]bool{}
		measured := 0
		for j := range Schedule(counts, "shuffled", int64(n)) {
			if j.Phase != "measure" {
				continue
			}
			k := [2]int{j.Config, j.Rep}
			if seen[k] {
				t.Fatalf("n=%d: c%d:measure%d twice", n, j.Config, j.Rep)
			}
			if j.Rep < 0 || j.Rep >= counts[j.Config].Repetitions {
				t.Fatalf("n=%d: c%d:measure%d is outside its %d repetitions", n, j.Config, j.Rep, counts[j.Config].Repetitions)
			}
			seen[k] = true
			measured++
		}
		if measured != n {
			t.Errorf("n=%d: %d measured requests", n, measured)
		}
	}
}

// TestScheduleIsLazy checks that a schedule of a billion requests costs nothing until it is
// consumed: taking its first jobs allocates no more than a small one does, in every mode.
func TestScheduleIsLazy(t *testing.T) {
	huge := []Counts{{Warmup: 1_000_000_000, Repetitions: 1_000_000_000}, {Repetitions: 1_000_000_000}}
	for _, mode := range []string{"sequential", "interleaved", "shuffled"} {
		allocs := testing.AllocsPerRun(5, func() {
			n := 0
			for range Schedule(huge, mode, 1) {
				if n++; n == 100 {
					break
				}
			}
		})
		if allocs > 10 {
			t.Errorf("%s: taking 100 jobs of a billion made %.0f allocations", mode, allocs)
		}
	}
	// Measured jobs of a huge shuffled schedule start at once too: skip the warm-ups.
	n := 0
	for j := range Schedule([]Counts{{Repetitions: 1 << 40}}, "shuffled", 3) {
		if j.Phase == "measure" {
			if n++; n == 1000 {
				break
			}
		}
	}
	if n != 1000 {
		t.Fatalf("got %d measured jobs", n)
	}
}

func TestScheduleLength(t *testing.T) {
	counts := []Counts{{Warmup: 2, Repetitions: 5}, {Warmup: 1, Repetitions: 4}}
	for _, mode := range []string{"sequential", "interleaved", "shuffled"} {
		if got, want := len(slices.Collect(Schedule(counts, mode, 9))), 1+2+5+1+4; got != want {
			t.Errorf("%s: %d jobs, want %d", mode, got, want)
		}
	}
}
