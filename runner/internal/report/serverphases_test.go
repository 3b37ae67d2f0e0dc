package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Server timings the tests give a request: a fixed queue and client overhead, prefill the
// rest of its TTFT, decode the rest of its e2e.
const (
	testQueue    = 200 * time.Microsecond
	testOverhead = 300 * time.Microsecond
)

// timeRequest fills q's server timings as a server would report them for it, leaving out the
// phases in skip ("queue", "prefill", "decode").
func timeRequest(q *record.Request, skip ...string) {
	if q.TTFT == nil || q.E2E == nil {
		return
	}
	dur := func(d time.Duration) *time.Duration { return &d }
	serverTTFT := *q.TTFT - testOverhead
	phases := map[string]**time.Duration{"queue": &q.ServerQueue, "prefill": &q.ServerPrefill, "decode": &q.ServerDecode}
	values := map[string]time.Duration{"queue": testQueue, "prefill": serverTTFT - testQueue, "decode": *q.E2E - *q.TTFT}
	for name, field := range phases {
		*field = dur(values[name])
	}
	for _, name := range skip {
		*phases[name] = nil
	}
	q.ServerTTFT = dur(serverTTFT)
	q.ServerE2E = dur(*q.E2E - testOverhead)
	q.ClientOverhead = dur(testOverhead)
}

// manyRequests returns f with config id's measured requests repeated until it has n of them,
// each with its own sequence number.
func manyRequests(t *testing.T, f *Folder, id string, n int) {
	t.Helper()
	var measured []record.Request
	seq := 0
	for _, q := range f.Requests {
		if q.ConfigID == id {
			seq = max(seq, q.Seq+1)
			if q.Phase == record.PhaseMeasure && q.Status == record.StatusOK {
				measured = append(measured, q)
			}
		}
	}
	if len(measured) == 0 {
		t.Fatalf("config %s has no measured request", id)
	}
	for have := len(measured); have < n; have++ {
		q := measured[have%len(measured)]
		q.Seq = seq
		seq++
		f.Requests = append(f.Requests, q)
	}
}

func TestServerPhasesChart(t *testing.T) {
	fixture := func(t *testing.T, name string) *Folder {
		return load(t, filepath.Join("testdata", name))[0]
	}
	timeAll := func(f *Folder, skip ...string) {
		for i := range f.Requests {
			timeRequest(&f.Requests[i], skip...)
		}
	}
	timeConfig := func(f *Folder, id string) {
		for i := range f.Requests {
			if f.Requests[i].ConfigID == id {
				timeRequest(&f.Requests[i])
			}
		}
	}
	tests := []struct {
		name    string
		folders func(t *testing.T) []*Folder
		panels  int           // 0: the chart is left out
		bars    []int         // bars per panel
		caption []string      // what the caption must say
		missing time.Duration // the phases left out of each request
	}{
		{
			name:    "no server timings",
			folders: func(t *testing.T) []*Folder { return []*Folder{fixture(t, "new")} },
		},
		{
			name: "every request timed",
			folders: func(t *testing.T) []*Folder {
				f := fixture(t, "new")
				timeAll(f)
				return []*Folder{f}
			},
			panels:  6,
			bars:    []int{6, 6, 6, 6, 5, 6},
			caption: []string{"35 of the 35 timed requests here (35 measured)", "prompt_tokens=64,max_tokens=16 0.30 ms"},
		},
		{
			name: "one config timed, sampled to 50",
			folders: func(t *testing.T) []*Folder {
				f := fixture(t, "new")
				id := f.Configs[0].ID
				manyRequests(t, f, id, 130)
				timeConfig(f, id)
				return []*Folder{f}
			},
			panels:  1,
			bars:    []int{50},
			caption: []string{"50 of the 130 timed requests here (159 measured)"},
		},
		{
			name: "queue missing",
			folders: func(t *testing.T) []*Folder {
				f := fixture(t, "new")
				timeAll(f, "queue")
				return []*Folder{f}
			},
			panels:  6,
			bars:    []int{6, 6, 6, 6, 5, 6},
			caption: []string{"35 requests lack a phase, drawn as zero"},
			missing: testQueue,
		},
		{
			name: "two folders",
			folders: func(t *testing.T) []*Folder {
				old, new := fixture(t, "old"), fixture(t, "new")
				timeAll(old)
				timeAll(new)
				return []*Folder{old, new}
			},
			panels:  6,
			caption: []string{"(old) 0.30 ms", "(new) 0.30 ms", "the requests of the old folder come first, lighter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			folders := tt.folders(t)
			var runs []*run
			if len(folders) == 1 {
				runs = []*run{newRun("", folders[0])}
			} else {
				runs = []*run{newRun("old", folders[0]), newRun("new", folders[1])}
			}
			panels, _ := phasePanels(runs)
			if len(panels) != tt.panels {
				t.Fatalf("%d panels, want %d", len(panels), tt.panels)
			}
			for i, n := range tt.bars {
				if got := len(panels[i].bars); got != n {
					t.Errorf("panel %s: %d bars, want %d", panels[i].label, got, n)
				}
			}
			// Every bar is one request as the records hold it: phases that add up to the
			// server's TTFT and the client's e2e less the overhead, beside the client's own.
			for _, pn := range panels {
				for _, b := range pn.bars {
					server := b.phases[0] + b.phases[1] + b.phases[2]
					if want := b.e2e - ms(testOverhead+tt.missing); math.Abs(server-want) > 1e-9 {
						t.Errorf("panel %s: phases add up to %g ms, want e2e %g ms less the overhead", pn.label, server, b.e2e)
					}
					if b.ttft > b.e2e || b.ttft <= 0 {
						t.Errorf("panel %s: client TTFT %g ms, e2e %g ms", pn.label, b.ttft, b.e2e)
					}
				}
			}
			res, err := Write(outDir(t, "server-phases-"+strings.ReplaceAll(tt.name, " ", "-")), folders...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.panels == 0 {
				checkReport(t, res, untimedCharts())
				untimedSkips(t, res.Skipped)
				return
			}
			page := checkReport(t, res, ChartNames())
			for _, w := range tt.caption {
				if !strings.Contains(page, w) {
					t.Errorf("%s lacks %q", IndexFile, w)
				}
			}
			svg := string(checkSVG(t, filepath.Join(res.Dir, serverPhasesChartName+".svg")))
			for _, w := range append(phaseNames[:], "client: TTFT", "client: rest to e2e") {
				if !strings.Contains(svg, w) {
					t.Errorf("%s.svg has no legend entry %q", serverPhasesChartName, w)
				}
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func TestSamplePhases(t *testing.T) {
	for _, n := range []int{0, 1, 49, 50, 51, 130, 1000} {
		qs := make([]*record.Request, n)
		for i := range qs {
			qs[i] = &record.Request{Seq: i}
		}
		got := samplePhases(qs)
		if want := min(n, maxPhaseBars); len(got) != want {
			t.Errorf("n=%d: %d sampled, want %d", n, len(got), want)
			continue
		}
		if n == 0 {
			continue
		}
		if got[0].Seq != 0 || got[len(got)-1].Seq != n-1 {
			t.Errorf("n=%d: the sample runs from %d to %d, want the first and the last", n, got[0].Seq, got[len(got)-1].Seq)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				t.Errorf("n=%d: sample %d (seq %d) does not follow seq %d", n, i, got[i].Seq, got[i-1].Seq)
			}
			// Evenly spaced: no step is more than one request longer than another.
			if step := got[i].Seq - got[i-1].Seq; step < (n-1)/(maxPhaseBars-1) || step > (n-1)/(maxPhaseBars-1)+1 {
				t.Errorf("n=%d: step %d between samples %d and %d", n, step, i-1, i)
			}
		}
	}
}
