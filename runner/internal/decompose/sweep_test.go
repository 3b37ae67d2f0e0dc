package decompose

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results/resultstest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// truth is the latency model a synthetic sweep is drawn from.
type truth struct {
	a, b, c float64 // ms, ms per prompt token, ms per output token after the first
	noise   float64 // standard deviation of the TTFT noise, ms
}

func msDur(x float64) *time.Duration { return record.Dur(time.Duration(x * 1e6)) }

// synthSweep returns configs over prompt × output lengths (plus an optional dtype axis) and
// their requests drawn from tr with a PCG source of the given seeds: per config one first
// request and one warm-up request far off the line, reps measured ones, and one failed
// measured request, so that a fit that kept any of those would miss the truth.
func synthSweep(seed [2]uint64, tr map[string]truth, prompts, outputs []int, reps int) ([]experiment.Config, []record.Request) {
	var configs []experiment.Config
	type point struct {
		m    truth
		p, o int
	}
	points := map[string]point{}
	dtypes := []string{"half", "float"}[:len(tr)]
	if len(tr) == 1 {
		for k := range tr {
			dtypes = []string{k}
		}
	}
	for _, dt := range dtypes {
		for _, p := range prompts {
			for _, o := range outputs {
				c := experiment.Config{ID: fmt.Sprintf("c%d", len(configs)), ServerID: "s-" + dt, Index: len(configs),
					Label: fmt.Sprintf("prompt_tokens=%d,max_tokens=%d", p, o),
					Axes: []experiment.AxisValue{{Path: "request.prompt_tokens", Value: fmt.Sprint(p)},
						{Path: "request.max_tokens", Value: fmt.Sprint(o)}}}
				if len(tr) > 1 {
					c.Axes = append(c.Axes, experiment.AxisValue{Path: "server.dtype", Value: dt})
				}
				configs = append(configs, c)
				points[c.ID] = point{tr[dt], p, o}
			}
		}
	}
	b := &resultstest.Builder{Configs: configs, Seed: seed,
		Requests: func(experiment.Config) int { return reps + 3 },
		Request: func(d resultstest.Draw) record.Request {
			c, seq, rng := d.Config, d.Seq, d.Rand
			m, p, o := points[c.ID].m, points[c.ID].p, points[c.ID].o
			phase, status := record.PhaseMeasure, record.StatusOK
			ttft := m.a + m.b*float64(p) + m.noise*rng.NormFloat64()
			decode := 0.0
			for range o - 1 {
				decode += m.c + 0.3*m.c*rng.NormFloat64()
			}
			switch seq {
			case 0:
				phase, ttft, decode = record.PhaseFirst, ttft+4000, decode*3
			case 1:
				phase, ttft = record.PhaseWarmup, ttft+900
			case 2:
				status, ttft = record.StatusFailed, 1
			}
			return record.Request{ConfigID: c.ID, ServerID: c.ServerID, Seq: seq, Phase: phase, Status: status,
				TTFT: msDur(ttft), E2E: msDur(ttft + decode + 0.2), OutputTokens: record.Int(o),
				PromptTokensRequested: record.Int(p), PromptTokensReported: record.Int(p)}
		},
	}
	return configs, b.Records()
}

// within checks that an estimate is close to the truth and that its interval covers it.
func within(t *testing.T, what string, e Estimate, want, tol float64) {
	t.Helper()
	if math.Abs(e.Value-want) > tol {
		t.Errorf("%s = %.5g, want %.5g ± %.3g", what, e.Value, want, tol)
	}
	if !(e.Low <= want && want <= e.High) {
		t.Errorf("%s interval [%.5g, %.5g] misses the true %.5g", what, e.Low, e.High, want)
	}
}

func TestSweepsRecoverKnownCoefficients(t *testing.T) {
	tr := map[string]truth{"half": {a: 18, b: 0.045, c: 7.5, noise: 1.5}, "float": {a: 30, b: 0.11, c: 15, noise: 3}}
	configs, reqs := synthSweep([2]uint64{2026, 1}, tr, []int{32, 128, 256, 512, 896}, []int{16, 64, 256}, 8)
	sweeps := Sweeps(configs, reqs)
	if len(sweeps) != 2 {
		t.Fatalf("%d sweeps, want one per dtype", len(sweeps))
	}
	for _, s := range sweeps {
		dt := strings.TrimPrefix(s.Name, "dtype=")
		m, ok := tr[dt]
		if !ok {
			t.Fatalf("sweep named %q, want dtype=half or dtype=float", s.Name)
		}
		if len(s.ConfigIDs) != 15 {
			t.Errorf("%s: %d configs, want 15", s.Name, len(s.ConfigIDs))
		}
		p, d := s.Prefill, s.Decode
		if !p.OK() || !d.OK() {
			t.Fatalf("%s: prefill %q, decode %q", s.Name, p.Skipped, d.Skipped)
		}
		// 15 configs × 8 measured requests: first, warm-up and failed rows are not fitted.
		if p.Line.N != 120 || d.Line.N != 120 || p.Configs != 15 || p.Lengths != 5 || d.Lengths != 3 {
			t.Errorf("%s: prefill n %d (%d configs, %d lengths), decode n %d (%d lengths); want 120 (15, 5), 120 (3)",
				s.Name, p.Line.N, p.Configs, p.Lengths, d.Line.N, d.Lengths)
		}
		within(t, s.Name+" a", p.Line.Intercept, m.a, 0.15*m.a)
		within(t, s.Name+" b", p.Line.Slope, m.b, 0.05*m.b)
		within(t, s.Name+" c", d.Line.Slope, m.c, 0.02*m.c)
		if p.Line.R2 < 0.95 || d.Line.R2 < 0.99 {
			t.Errorf("%s: R² prefill %.3f, decode %.3f; want a near-perfect line", s.Name, p.Line.R2, d.Line.R2)
		}
		if p.PromptSource != PromptReported || len(p.Warnings) != 0 || len(d.Warnings) != 0 {
			t.Errorf("%s: prompt source %q, warnings %q %q", s.Name, p.PromptSource, p.Warnings, d.Warnings)
		}
	}
}

func TestPromptTokenSource(t *testing.T) {
	base := func(cfg string, requested, reported *int, ttft float64) record.Request {
		return record.Request{ConfigID: cfg, Phase: record.PhaseMeasure, Status: record.StatusOK, TTFT: msDur(ttft),
			E2E: msDur(ttft + 100), OutputTokens: record.Int(11), PromptTokensRequested: requested, PromptTokensReported: reported}
	}
	i := record.Int
	tests := []struct {
		name     string
		reqs     []record.Request
		wantX    []float64
		source   string
		skipped  string
		warnings []string
	}{
		{"reported wins", []record.Request{base("a", i(100), i(107), 10), base("b", i(200), i(207), 20), base("b", i(200), i(207), 21)},
			[]float64{107, 207, 207}, PromptReported, "", []string{"differs from the requested one in 3 requests"}},
		{"requested when none reported", []record.Request{base("a", i(100), nil, 10), base("b", i(200), nil, 20), base("c", i(300), nil, 31)},
			[]float64{100, 200, 300}, PromptRequested, "", nil},
		{"mixed", []record.Request{base("a", i(100), i(100), 10), base("b", i(200), nil, 20), base("c", nil, i(300), 31)},
			[]float64{100, 200, 300}, PromptMixed, "", []string{"as requested for 1 of 3 requests"}},
		{"no counts", []record.Request{base("a", nil, nil, 10), base("b", nil, nil, 20)},
			nil, "", "no prompt token counts", []string{"2 requests without a prompt token count left out"}},
		{"one length", []record.Request{base("a", i(64), nil, 10), base("a", i(64), nil, 12), base("a", i(64), nil, 11)},
			[]float64{64, 64, 64}, PromptRequested, "one prompt length (64 tokens)", nil},
		{"two lengths", []record.Request{base("a", i(64), nil, 10), base("a", i(64), nil, 12), base("b", i(128), nil, 14)},
			[]float64{64, 64, 128}, PromptRequested, "", []string{"two prompt lengths only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Sweeps(nil, tt.reqs)
			if len(s) != 1 || s[0].Name != AllConfigs {
				t.Fatalf("sweeps %+v, want one named %q", s, AllConfigs)
			}
			p := s[0].Prefill
			if fmt.Sprint(p.X) != fmt.Sprint(tt.wantX) || p.PromptSource != tt.source {
				t.Errorf("x %v from %q, want %v from %q", p.X, p.PromptSource, tt.wantX, tt.source)
			}
			if !strings.Contains(p.Skipped, tt.skipped) || (tt.skipped == "") != p.OK() {
				t.Errorf("skipped %q, want %q", p.Skipped, tt.skipped)
			}
			joined := strings.Join(p.Warnings, "|")
			for _, w := range tt.warnings {
				if !strings.Contains(joined, w) {
					t.Errorf("warnings %q lack %q", p.Warnings, w)
				}
			}
			if tt.warnings == nil && len(p.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", p.Warnings)
			}
		})
	}
}

func TestDecodeEdgeCases(t *testing.T) {
	req := func(out *int, ttft, e2e float64) record.Request {
		r := record.Request{ConfigID: "a", Phase: record.PhaseMeasure, Status: record.StatusOK, TTFT: msDur(ttft), OutputTokens: out}
		if e2e > 0 {
			r.E2E = msDur(e2e)
		}
		return r
	}
	i := record.Int
	t.Run("one output length", func(t *testing.T) {
		d := Sweeps(nil, []record.Request{req(i(11), 10, 110), req(i(11), 10, 130)})[0].Decode
		if !d.OK() || !near(d.Line.Slope.Value, 11, 1e-9) || !math.IsNaN(d.Line.R2) {
			t.Errorf("c %g, R² %g; want 11 and undefined", d.Line.Slope.Value, d.Line.R2)
		}
		if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "one output length (10 tokens after the first)") {
			t.Errorf("warnings %q", d.Warnings)
		}
	})
	t.Run("single tokens", func(t *testing.T) {
		d := Sweeps(nil, []record.Request{req(i(1), 10, 11), req(i(1), 10, 12)})[0].Decode
		if d.OK() || !strings.Contains(d.Skipped, "single token") {
			t.Errorf("skipped %q", d.Skipped)
		}
	})
	t.Run("missing counts", func(t *testing.T) {
		d := Sweeps(nil, []record.Request{req(nil, 10, 110), req(i(11), 10, 0), req(i(21), 10, 210), req(i(11), 10, 110)})[0].Decode
		if d.Line.N != 2 || len(d.Warnings) == 0 || !strings.Contains(d.Warnings[0], "2 requests without an e2e time or an output token count") {
			t.Errorf("n %d, warnings %q", d.Line.N, d.Warnings)
		}
	})
	t.Run("nothing measured", func(t *testing.T) {
		r := req(i(11), 10, 110)
		r.Phase = record.PhaseWarmup
		s := Sweeps(nil, []record.Request{r})[0]
		if s.Decode.OK() || s.Prefill.OK() || !strings.Contains(s.Decode.Skipped, "no measured successful requests") {
			t.Errorf("decode %q, prefill %q", s.Decode.Skipped, s.Prefill.Skipped)
		}
	})
}

func TestSweepGrouping(t *testing.T) {
	ax := func(kv ...string) []experiment.AxisValue {
		var out []experiment.AxisValue
		for i := 0; i < len(kv); i += 2 {
			out = append(out, experiment.AxisValue{Path: kv[i], Value: kv[i+1]})
		}
		return out
	}
	configs := []experiment.Config{
		{ID: "x3", Index: 3, Axes: ax("request.prompt_tokens", "64", "request.api", "chat", "server.dtype", "half")},
		{ID: "x0", Index: 0, Axes: ax("request.prompt_tokens", "32", "request.api", "completions", "server.dtype", "half")},
		{ID: "x1", Index: 1, Axes: ax("request.prompt_tokens", "64", "request.api", "completions", "server.dtype", "half")},
		{ID: "x2", Index: 2, Axes: ax("request.prompt_tokens", "32", "request.api", "chat", "server.dtype", "half")},
	}
	reqs := []record.Request{{ConfigID: "ghost", Phase: record.PhaseMeasure, Status: record.StatusOK, TTFT: msDur(3)}}
	s := Sweeps(configs, reqs)
	var got []string
	for _, w := range s {
		got = append(got, w.Name+":"+strings.Join(w.ConfigIDs, "+"))
	}
	want := "api=completions,dtype=half:x0+x1 api=chat,dtype=half:x2+x3 all configs:ghost"
	if strings.Join(got, " ") != want {
		t.Errorf("sweeps %q, want %q", got, want)
	}
	if len(s[0].Axes) != 2 || s[0].Axes[0].Path != "request.api" {
		t.Errorf("axes of the first sweep: %+v", s[0].Axes)
	}
}

func TestDescribe(t *testing.T) {
	configs, reqs := synthSweep([2]uint64{5, 5}, map[string]truth{"half": {a: 20, b: 0.05, c: 8, noise: 1}}, []int{64, 256, 512}, []int{32, 128}, 6)
	s := Sweeps(configs, reqs)[0]
	p, d := s.Prefill.Describe(), s.Decode.Describe()
	for _, w := range []string{"a = ", " ms, b = ", "ms/token, R² 0.9", "36 requests of 6 configs", "(prompt tokens reported)"} {
		if !strings.Contains(p, w) {
			t.Errorf("prefill %q lacks %q", p, w)
		}
	}
	if !strings.HasPrefix(d, "c = 7.9") || !strings.Contains(d, "ms/token, R² 0.99") || !strings.Contains(d, "36 requests of 6 configs") {
		t.Errorf("decode %q", d)
	}
	skipped := Fit{Model: Prefill, Skipped: "one prompt length (64 tokens): no slope to fit"}
	if got := skipped.Describe(); got != "not fitted: one prompt length (64 tokens): no slope to fit" {
		t.Errorf("skipped fit: %q", got)
	}
	tests := []struct {
		e    Estimate
		want string
	}{
		{Estimate{Value: 0.0501234, Low: 0.049, High: 0.05125}, "0.05012 [0.049, 0.05125] ms/token"},
		{Estimate{Value: 12, Low: math.NaN(), High: math.NaN()}, "12 ms/token (no interval)"},
	}
	for _, tt := range tests {
		if got := FormatEstimate(tt.e, "ms/token"); got != tt.want {
			t.Errorf("FormatEstimate(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
	if Num(math.NaN()) != "-" || Num(1234.5678) != "1235" || Num(1e-5) != "1e-05" {
		t.Errorf("Num: %q %q %q", Num(math.NaN()), Num(1234.5678), Num(1e-5))
	}
}

func TestWriteCSVGolden(t *testing.T) {
	configs, reqs := synthSweep([2]uint64{9, 9}, map[string]truth{"half": {a: 20, b: 0.05, c: 8, noise: 1}, "float": {a: 31, b: 0.1, c: 16, noise: 2}},
		[]int{64, 512}, []int{32}, 5)
	oneLength := []record.Request{{ConfigID: "z", Phase: record.PhaseMeasure, Status: record.StatusOK, TTFT: msDur(10),
		E2E: msDur(100), OutputTokens: record.Int(10), PromptTokensRequested: record.Int(128)}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, Set{Folder: "20260101T000000Z-aaaaaa", Sweeps: Sweeps(configs, reqs)},
		Set{Folder: "20260102T000000Z-bbbbbb", Sweeps: Sweeps(nil, oneLength)}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want a header and 3 rows", len(recs))
	}
	for _, r := range recs[1:] {
		if len(r) != len(CSVHeader) || r[0] != "1" {
			t.Errorf("row %q: %d cells, want %d starting with the schema version", r, len(r), len(CSVHeader))
		}
		for j, cell := range r {
			if cell == "NaN" || strings.ContainsAny(cell, "\r\n") {
				t.Errorf("%s: cell %q", CSVHeader[j], cell)
			}
		}
	}
	checkGolden(t, filepath.Join("testdata", "fits.csv.golden"), buf.Bytes())
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test -update to accept):\n%s", path, got)
	}
}
