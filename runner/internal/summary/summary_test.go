package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// testReport is a report of two configs: a, whose every metric has three values and one
// warning, and b, none of whose requests succeeded.
func testReport() *Report {
	rep := &Report{Manifest: &results.Manifest{Experiment: results.ExperimentFile{Name: "exp"},
		Start: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}, Status: results.StatusComplete, Requests: 6, Failed: 3,
		Dead: map[string]string{"b": "no successful request: 3 of 3 measured requests failed: http: 500"}}
	for _, id := range []string{"a", "b"} {
		for _, m := range results.Metrics() {
			row := results.SummaryRow{ConfigID: id, Label: "config " + id, Metric: m.Name}
			if id == "a" {
				row.Summary = stats.Summarize([]float64{1, 2, 3})
				row.Warnings = []string{"too few values"}
			} else {
				row.Summary = stats.Summarize(nil)
				row.NFailed = 3
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep
}

func TestNewEncoder(t *testing.T) {
	for _, f := range append(Formats(), "md") {
		if _, err := NewEncoder(f, &bytes.Buffer{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	_, err := NewEncoder("yaml", &bytes.Buffer{})
	if err == nil || err.Error() != `unknown format "yaml" (want text, markdown, csv, json)` {
		t.Errorf("yaml: %v", err)
	}
}

func TestTextAndMarkdown(t *testing.T) {
	tests := []struct {
		format string
		want   []string
		not    []string
	}{
		{"text", []string{
			"experiment exp, status complete, 6 measured requests (3 failed), started 2025-01-02T03:04:05Z\n",
			"  config / metric       n  failed  median    p95    min    max  median 95% CI\n  config a\n    ttft_ms             3       0   2.000  2.900  1.000  3.000              -\n",
			"  config b: no successful request: 3 of 3 measured requests failed: http: 500\n",
			"\nwarnings:\n  config a: too few values (all metrics)\n",
		}, []string{"config b\n", "p99", "stddev"}},
		{"text-wide", []string{
			"experiment exp, status complete, 6 measured requests (3 failed), started 2025-01-02T03:04:05Z\n",
			"  config    metric              n  failed  median    p95    p99    min    max   mean  stddev  median 95% CI\n",
			"  config b  no successful request: 3 of 3 measured requests failed: http: 500\n",
			"\nwarnings:\n  config a: too few values (all metrics)\n",
		}, []string{"config b  ttft_ms"}},
		{"markdown", []string{
			"**experiment exp, status complete, 6 measured requests (3 failed), started 2025-01-02T03:04:05Z**\n",
			"| config a | ttft_ms | 3 | 0 | 2.000 |",
			"- **config b**: no successful request",
			"- config a: too few values (all metrics)\n",
		}, []string{"| config b |"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			enc := encoder(tt.format, &buf)
			if err := enc.Encode(testReport()); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("lacks %q:\n%s", w, buf.String())
				}
			}
			for _, w := range tt.not {
				if strings.Contains(buf.String(), w) {
					t.Errorf("has %q:\n%s", w, buf.String())
				}
			}
		})
	}
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := NewJSONEncoder(&buf).Encode(testReport()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			ConfigID string   `json:"config_id"`
			Median   *float64 `json:"median"`
			Warnings []string `json:"warnings"`
		} `json:"rows"`
		Fits []any `json:"fits"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	n := len(results.Metrics())
	if len(doc.Rows) != 2*n || doc.Fits == nil {
		t.Fatalf("%d rows, fits %v", len(doc.Rows), doc.Fits)
	}
	a, b := doc.Rows[0], doc.Rows[n]
	if a.Median == nil || *a.Median != 2 || len(a.Warnings) != 1 {
		t.Errorf("config a: %+v", a)
	}
	if b.Median != nil || b.Warnings == nil {
		t.Errorf("config b: median %v, warnings %v; want null and []", b.Median, b.Warnings)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

func TestEncodersReturnWriteErrors(t *testing.T) {
	for _, f := range Formats() {
		enc, _ := NewEncoder(f, failWriter{})
		if err := enc.Encode(testReport()); !errors.Is(err, errFull) {
			t.Errorf("%s: %v, want %v", f, err, errFull)
		}
	}
}

// TestLoadTable checks that every format but csv shows the load points when the report has
// them, and that a report without them shows no load table.
func TestLoadTable(t *testing.T) {
	nan := math.NaN()
	lag := 1500 * time.Microsecond
	withLoad := testReport()
	withLoad.Load = []results.LoadRow{
		{ConfigID: "a", Label: "config a", LoadMode: record.LoadOpen, Concurrency: 16, TargetRate: 10, Measured: 3, Completed: 3,
			Window: 2 * time.Second, AchievedRate: 1.5, OutputTokensPerS: 96, SendLagP99: &lag, Good: record.Int(2), Goodput: 1, SLOAttained: 2.0 / 3},
		{ConfigID: "b", Label: "config b", TargetRate: nan, Measured: 3, Failed: 3, AchievedRate: nan, OutputTokensPerS: nan,
			Goodput: nan, SLOAttained: nan},
	}
	// The same load points, the first with the server's figures (load_server.csv).
	withServer := testReport()
	withServer.Load = append([]results.LoadRow(nil), withLoad.Load...)
	ttft, overhead := 12500*time.Microsecond, 750*time.Microsecond
	withServer.Load[0].Server = results.LoadServer{Requests: record.Int(5), TTFTMean: &ttft, ClientOverheadMean: &overhead}
	tests := []struct {
		format string
		rep    *Report
		want   []string
		not    []string
	}{
		{"text-wide", withServer, []string{"send lag p99 ms  server ttft ms  overhead ms",
			"66.7%            1.500          12.500        0.750", "config b  -"}, nil},
		{"text", withServer, []string{"  config    load                 rps   tok/s  goodput  slo met  lag p99 ms  server ttft  overhead\n",
			"  config a  open 10.000/s ≤16  1.500  96.000    1.000    66.7%       1.500       12.500     0.750\n",
			"  config b  -                      -       -        -        -           -            -         -\n"}, nil},
		{"markdown", withServer, []string{"| send lag p99 ms | server ttft ms | overhead ms |",
			"| config a | open | 16 | 10.000 | 1.500 | 96.000 | 1.000 | 66.7% | 1.500 | 12.500 | 0.750 |", " | - | - | - |"}, nil},
		{"json", withServer, []string{`"server_requests": 5,`, `"server_ttft_mean_ms": 12.5,`, `"client_overhead_mean_ms": 0.75`}, []string{`"server_e2e_mean_ms"`}},
		{"text", withLoad, nil, []string{"server ttft", "lag p99 ms  overhead"}},
		{"text-wide", withLoad, nil, []string{"server ttft ms", "overhead ms"}},
		{"json", withLoad, nil, []string{`"server_requests"`, `"client_overhead_mean_ms"`}},
		{"text-wide", withLoad, []string{"\nload (rates over each config's measured window):\n", "config    mode  concurrency",
			"config a  open           16      10.000         1.500        96.000        1.000    66.7%            1.500", "config b  -               -"}, nil},
		{"markdown", withLoad, []string{"| config | mode | concurrency | target rps |",
			"| config a | open | 16 | 10.000 | 1.500 | 96.000 | 1.000 | 66.7% | 1.500 |"}, nil},
		{"json", withLoad, []string{`"load": [`, `"load_mode": "open"`, `"window_s": 2,`, `"send_lag_p99_ms": 1.5,`, `"target_rate_rps": null`}, nil},
		{"csv", withLoad, nil, []string{"open"}},
		{"text", testReport(), nil, []string{"load"}},
		{"json", testReport(), nil, []string{`"load"`}},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		enc := encoder(tc.format, &b)
		if err := enc.Encode(tc.rep); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%s", tc.format, w, b.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s has %q:\n%s", tc.format, w, b.String())
			}
		}
	}
}

func TestServerNotes(t *testing.T) {
	tests := []struct {
		servers []results.ServerInfo
		want    []string
	}{
		{nil, nil},
		{[]results.ServerInfo{{ServerID: "s0"}}, nil},
		{[]results.ServerInfo{{ServerID: "s0"}, {ServerID: "s1", TelemetryWarning: "GPU telemetry: nvidia-smi gave no sample for 3s (after 12 samples): it hangs"}},
			[]string{"server s1: GPU telemetry: nvidia-smi gave no sample for 3s (after 12 samples): it hangs"}},
		// The sampler's own words are printed with their control characters visible.
		{[]results.ServerInfo{{ServerID: "s2", TelemetryWarning: "GPU telemetry: nvidia-smi: \x1b]0;pwned\x07"}},
			[]string{`server s2: GPU telemetry: nvidia-smi: \x1b]0;pwned\x07`}},
	}
	for _, tc := range tests {
		if got := serverNotes(tc.servers); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("serverNotes(%+v) = %q, want %q", tc.servers, got, tc.want)
		}
	}
}

// encoder returns NewEncoder's encoder of format, or for "text-wide" the text encoder that shows
// every column.
func encoder(format string, w io.Writer) Encoder {
	if format == "text-wide" {
		return NewTextEncoder(w).Wide(true)
	}
	enc, err := NewEncoder(format, w)
	if err != nil {
		panic(err)
	}
	return enc
}

// TestRunWarnings checks that a warning every config has is said once, and only then.
func TestRunWarnings(t *testing.T) {
	small := "n=8: p95 and p99 lie between the two largest values"
	row := func(id, label, metric string, ws ...string) results.SummaryRow {
		return results.SummaryRow{ConfigID: id, Label: label, Metric: metric, Summary: stats.Summary{Warnings: ws}}
	}
	show := func(ws []runWarning) string {
		var lines []string
		for _, w := range ws {
			lines = append(lines, w.Label+": "+w.Text+" ("+strings.Join(w.Metrics, ", ")+")")
		}
		return strings.Join(lines, "\n")
	}
	tests := []struct {
		name string
		rows []results.SummaryRow
		dead int
		want string
	}{
		{"every config", []results.SummaryRow{
			row("a", "x=1", "ttft_ms", small), row("a", "x=1", "e2e_ms", small),
			row("b", "x=2", "ttft_ms", small), row("b", "x=2", "e2e_ms", small, "other"),
		}, 0, "all configs: " + small + " (all metrics)\nx=2: other (e2e_ms)"},
		{"not every config", []results.SummaryRow{
			row("a", "x=1", "ttft_ms", small), row("b", "x=2", "ttft_ms"),
		}, 0, "x=1: " + small + " (ttft_ms)"},
		{"other metrics", []results.SummaryRow{
			row("a", "x=1", "ttft_ms", small), row("a", "x=1", "e2e_ms"),
			row("b", "x=2", "ttft_ms"), row("b", "x=2", "e2e_ms", small),
		}, 0, "x=1: " + small + " (ttft_ms)\nx=2: " + small + " (e2e_ms)"},
		{"a config without a result", []results.SummaryRow{
			row("a", "x=1", "ttft_ms", small), row("b", "x=2", "ttft_ms", small),
		}, 1, "all configs with a result: " + small + " (ttft_ms)"},
		// Two configs of one label are two configs: a warning of only one of them is not all.
		{"a shared label", []results.SummaryRow{
			row("a", "same", "ttft_ms", small), row("b", "same", "ttft_ms"), row("c", "other", "ttft_ms", small),
		}, 0, "same: " + small + " (ttft_ms)\nother: " + small + " (ttft_ms)"},
		{"one config", []results.SummaryRow{row("a", "x=1", "ttft_ms", small)}, 0, "x=1: " + small + " (ttft_ms)"},
		{"no rows", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(runWarnings(tt.rows, tt.dead)); got != tt.want {
				t.Errorf("runWarnings:\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestHostileText checks that text from a server or a folder reaches the terminal escaped: an
// error text with escape sequences (clear the screen, set the window title, colour, a C1
// control) is printed with them visible in every format, and a label with HTML and pipes is
// escaped in markdown as runner diff escapes it.
func TestHostileText(t *testing.T) {
	const hostileErr = "http: 500: \x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m\rgone"
	const hostileLabel = "<img src=x onerror=alert(1)> | b"
	rep := testReport()
	rep.Dead["b"] = "no successful request: " + hostileErr
	for i := range rep.Rows {
		if rep.Rows[i].ConfigID == "a" {
			rep.Rows[i].Label = hostileLabel
			rep.Rows[i].Warnings = []string{"server said \x1b[5m"}
		}
	}
	for _, format := range []string{"text", "text-wide", "markdown"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := encoder(format, &buf).Encode(rep); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if i := strings.IndexFunc(out, func(r rune) bool {
				return r != '\n' && r != '\t' && (r < 0x20 || (r >= 0x7f && r <= 0x9f))
			}); i >= 0 {
				t.Errorf("a control character %q reaches the output:\n%q", out[i], out)
			}
			for _, want := range []string{`\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b1m`, `server said \x1b[5m`} {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q:\n%s", want, out)
				}
			}
			if format == "markdown" {
				for _, want := range []string{`| \<img src=x onerror=alert(1)\> \| b | ttft_ms |`, `- \<img src=x onerror=alert(1)\> \| b: server said`} {
					if !strings.Contains(out, want) {
						t.Errorf("lacks %q:\n%s", want, out)
					}
				}
				if strings.Contains(strings.ReplaceAll(out, `\<`, ""), "<") {
					t.Errorf("raw HTML in markdown:\n%s", out)
				}
			}
		})
	}
}
