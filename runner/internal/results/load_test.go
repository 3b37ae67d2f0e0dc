package results

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// loadReq returns a measured request of config id sent at t0+at (seconds) whose stream ended
// e2e milliseconds later, with ttft and tokens as given.
func loadReq(id string, at, e2e, ttft float64, tokens int) record.Request {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(math.Round(x * 1e6))) }
	return record.Request{ConfigID: id, ServerID: "s", Phase: record.PhaseMeasure, Status: record.StatusOK,
		Start: t0.Add(time.Duration(math.Round(at * 1e9))), TTFT: ms(ttft), E2E: ms(e2e),
		TPOTToken: ms(2), OutputTokens: record.Int(tokens), TextEvents: tokens}
}

func TestSummarizeLoad(t *testing.T) {
	ms := func(x float64) *time.Duration { return record.Dur(time.Duration(math.Round(x * 1e6))) }
	nan := math.NaN()
	slo := []experiment.Bound{{Metric: "ttft_ms", Max: 100}, {Metric: "tpot_token_ms", Max: 5}}
	lagged := func(r record.Request, mode record.LoadMode, lag float64, inFlight int) record.Request {
		r.LoadMode, r.SendLag, r.Scheduled, r.InFlight = mode, ms(lag), ms(0), inFlight
		return r
	}
	failed := func(r record.Request) record.Request {
		r.Status, r.ErrorClass, r.TTFT, r.E2E, r.TPOTToken, r.OutputTokens = record.StatusFailed, record.ErrConnect, nil, nil, nil, nil
		return r
	}
	warm := func(r record.Request) record.Request { r.Phase = record.PhaseWarmup; return r }
	noTPOT := func(r record.Request) record.Request { r.TPOTToken = nil; return r }

	tests := []struct {
		name string
		cfg  experiment.Config
		reqs []record.Request
		want LoadRow
	}{{
		name: "one at a time, no SLO",
		cfg:  experiment.Config{ID: "a", ServerID: "s", Label: "A"},
		reqs: []record.Request{
			warm(loadReq("a", 0, 500, 50, 10)), // outside the window: a warm-up
			loadReq("a", 1, 500, 50, 10),
			loadReq("a", 2, 1000, 50, 20), // ends last, at 3 s
		},
		want: LoadRow{ConfigID: "a", ServerID: "s", Label: "A", TargetRate: nan,
			Measured: 2, Completed: 2, Window: 2 * time.Second, AchievedRate: 1, OutputTokensPerS: 15,
			Goodput: nan, SLOAttained: nan},
	}, {
		name: "closed loop with an SLO, a failure and a missing metric",
		cfg: experiment.Config{ID: "b", ServerID: "s", Label: "B", SLO: slo,
			Load: &experiment.LoadSpec{Concurrency: 4}},
		reqs: []record.Request{
			lagged(failed(loadReq("b", 0, 0, 0, 0)), record.LoadClosed, 0.5, 1),    // first t0: starts the window
			lagged(loadReq("b", 0.5, 1500, 50, 100), record.LoadClosed, 0.1, 2),    // ends at 2 s: good
			lagged(loadReq("b", 1, 3000, 150, 100), record.LoadClosed, 0.2, 4),     // ends at 4 s: ttft over its bound
			lagged(noTPOT(loadReq("b", 1, 500, 10, 1)), record.LoadClosed, 0.3, 3), // no tpot: not good
		},
		want: LoadRow{ConfigID: "b", ServerID: "s", Label: "B", LoadMode: record.LoadClosed, Concurrency: 4, TargetRate: nan,
			Measured: 4, Completed: 3, Failed: 1, Window: 4 * time.Second, AchievedRate: 1, OutputTokensPerS: 50.25,
			SendLagP50: ms(0.25), SendLagP99: ms(0.494), InFlightMax: 4,
			Good: record.Int(1), Goodput: 0.25, SLOAttained: 0.25},
	}, {
		name: "open loop with a cap",
		cfg: experiment.Config{ID: "c", ServerID: "s", Label: "C",
			Load: &experiment.LoadSpec{Rate: 2.5, MaxConcurrency: 8, Arrival: "poisson"}},
		reqs: []record.Request{
			lagged(loadReq("c", 0, 1000, 50, 10), record.LoadOpen, 1, 1),
		},
		want: LoadRow{ConfigID: "c", ServerID: "s", Label: "C", LoadMode: record.LoadOpen, Concurrency: 8, TargetRate: 2.5,
			Measured: 1, Completed: 1, Window: time.Second, AchievedRate: 1, OutputTokensPerS: 10,
			SendLagP50: ms(1), SendLagP99: ms(1), InFlightMax: 1, Goodput: nan, SLOAttained: nan},
	}, {
		name: "every request failed: no window",
		cfg:  experiment.Config{ID: "d", ServerID: "s", Label: "D", SLO: slo},
		reqs: []record.Request{failed(loadReq("d", 0, 0, 0, 0))},
		want: LoadRow{ConfigID: "d", ServerID: "s", Label: "D", TargetRate: nan, Measured: 1, Failed: 1,
			AchievedRate: nan, OutputTokensPerS: nan, Good: record.Int(0), Goodput: nan, SLOAttained: 0},
	}, {
		name: "no requests",
		cfg:  experiment.Config{ID: "e", ServerID: "s", Label: "E"},
		want: LoadRow{ConfigID: "e", ServerID: "s", Label: "E", TargetRate: nan,
			AchievedRate: nan, OutputTokensPerS: nan, Goodput: nan, SLOAttained: nan},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := SummarizeLoad([]experiment.Config{tc.cfg}, tc.reqs)
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			if got := rows[0]; !sameLoadRow(got, tc.want) {
				t.Errorf("got  %s\nwant %s", loadCSV([]LoadRow{got}, false), loadCSV([]LoadRow{tc.want}, false))
			}
		})
	}
}

// sameLoadRow compares rows with NaN equal to NaN and floats to a relative 1e-9.
func sameLoadRow(a, b LoadRow) bool {
	near := func(x, y float64) bool {
		return math.IsNaN(x) && math.IsNaN(y) || math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y))
	}
	if !near(a.TargetRate, b.TargetRate) || !near(a.AchievedRate, b.AchievedRate) || !near(a.OutputTokensPerS, b.OutputTokensPerS) ||
		!near(a.Goodput, b.Goodput) || !near(a.SLOAttained, b.SLOAttained) {
		return false
	}
	a.TargetRate, a.AchievedRate, a.OutputTokensPerS, a.Goodput, a.SLOAttained = 0, 0, 0, 0, 0
	b.TargetRate, b.AchievedRate, b.OutputTokensPerS, b.Goodput, b.SLOAttained = 0, 0, 0, 0, 0
	return reflect.DeepEqual(a, b)
}

// TestSummarizeLoadOrder checks one row per config in expansion order, then the configs that
// the list lacks, which take their load from their rows.
func TestSummarizeLoadOrder(t *testing.T) {
	configs := []experiment.Config{{ID: "b", Index: 1}, {ID: "a", Index: 0}}
	stray := loadReq("z", 0, 100, 10, 1)
	stray.LoadMode, stray.Rate, stray.Concurrency = record.LoadOpen, 4, 2
	rows := SummarizeLoad(configs, []record.Request{stray, loadReq("a", 0, 100, 10, 1)})
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ConfigID)
	}
	if !reflect.DeepEqual(ids, []string{"a", "b", "z"}) {
		t.Fatalf("configs %q", ids)
	}
	if z := rows[2]; z.ConfigIndex != -1 || z.LoadMode != record.LoadOpen || z.TargetRate != 4 || z.Concurrency != 2 {
		t.Errorf("stray config: %+v", z)
	}
}

// TestLoadCSVRoundTrip writes rows as load.csv and reads them back: NaN and nil are empty
// cells, and the window keeps its microseconds.
func TestLoadCSVRoundTrip(t *testing.T) {
	lag := record.Dur(1234567 * time.Nanosecond)
	rows := []LoadRow{
		{ConfigIndex: 0, ConfigID: "a", ServerID: "s", Label: "x=1", TargetRate: math.NaN(), Measured: 3, Completed: 3,
			Window: 2500123 * time.Microsecond, AchievedRate: 1.2, OutputTokensPerS: 12.5,
			Goodput: math.NaN(), SLOAttained: math.NaN()},
		{ConfigIndex: 1, ConfigID: "b", ServerID: "s", Label: "x=2", LoadMode: record.LoadOpen, Concurrency: 16, TargetRate: 10,
			Measured: 4, Completed: 3, Failed: 1, Window: 1500 * time.Millisecond, AchievedRate: 2, OutputTokensPerS: 40,
			SendLagP50: lag, SendLagP99: lag, InFlightMax: 12, Good: record.Int(2), Goodput: 1.333333, SLOAttained: 0.5},
		{ConfigIndex: 2, ConfigID: "c", ServerID: "s", Label: "x=3", TargetRate: math.NaN(), Measured: 1, Failed: 1,
			AchievedRate: math.NaN(), OutputTokensPerS: math.NaN(), Good: record.Int(0), Goodput: math.NaN(), SLOAttained: 0},
	}
	var buf bytes.Buffer
	if err := LoadCSV.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	const want = "schema_version,config_index,config_id,server_id,label,load_mode,concurrency,target_rate_rps,measured,completed,failed," +
		"window_s,achieved_rate_rps,output_tokens_per_s,send_lag_p50_ms,send_lag_p99_ms,in_flight_max,good,goodput_rps,slo_attained\n" +
		"1,0,a,s,x=1,,,,3,3,0,2.500123,1.200000,12.500000,,,,,,\n" +
		"1,1,b,s,x=2,open,16,10.000000,4,3,1,1.500000,2.000000,40.000000,1.234567,1.234567,12,2,1.333333,0.500000\n" +
		"1,2,c,s,x=3,,,,1,0,1,,,,,,,0,,0.000000\n"
	if buf.String() != want {
		t.Errorf("load.csv:\n%s\nwant:\n%s", buf.String(), want)
	}
	s := LoadCSV.NewScanner(&buf, LoadFile)
	var got []LoadRow
	for s.Scan() {
		got = append(got, s.Record())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows back", len(got))
	}
	for i := range rows {
		if !sameLoadRow(got[i], rows[i]) {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], rows[i])
		}
	}
}

// TestFolderWritesLoad checks that closing a folder writes load.csv, which the reader reads
// back as it computes it from the requests.
func TestFolderWritesLoad(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	r, err := Open(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.StoredLoad()
	if err != nil {
		t.Fatal(err)
	}
	computed, err := r.LoadSummary()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored[0].Completed == 0 {
		t.Fatalf("stored rows %+v", stored)
	}
	if s, c := loadCSV(stored, true), loadCSV(computed, true); !bytes.Equal(s, c) {
		t.Errorf("stored:\n%s\ncomputed:\n%s", s, c)
	}
}
