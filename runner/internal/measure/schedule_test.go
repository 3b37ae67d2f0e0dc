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
			if got := render(Schedule(counts, tt.mode, 0)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestScheduleShuffled(t *testing.T) {
	counts := []Counts{{Warmup: 1, Repetitions: 10}, {Warmup: 1, Repetitions: 10}, {Warmup: 1, Repetitions: 10}}
	a := Schedule(counts, "shuffled", 7)
	b := Schedule(counts, "shuffled", 7)
	c := Schedule(counts, "shuffled", 8)
	if render(a) != render(b) {
		t.Fatal("the same seed gave two orders")
	}
	if render(a) == render(c) {
		t.Fatal("two seeds gave the same order of 30 requests")
	}
	// The same multiset of requests as the sequential order, warm-ups first.
	seqOrder := Schedule(counts, "sequential", 0)
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
