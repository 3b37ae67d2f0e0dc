package results

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/redact"
	"github.com/onelayerdown/runner/runner/internal/stats"
)

// gen draws values from fuzz bytes; when the bytes run out it returns zeros.
type gen struct {
	b   []byte
	str []string
}

func (g *gen) u64() uint64 {
	var buf [8]byte
	n := copy(buf[:], g.b)
	g.b = g.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}
func (g *gen) i64() int64  { return int64(g.u64()) }
func (g *gen) int() int    { return int(g.i64()) }
func (g *gen) bool() bool  { return g.u64()&1 == 1 }
func (g *gen) small() int  { return int(g.u64() % 5000) }
func (g *gen) maybe() bool { return g.u64()%3 != 0 }
func (g *gen) s() string {
	if len(g.str) == 0 {
		return ""
	}
	i := int(g.u64() % uint64(len(g.str)))
	return g.str[i]
}
func (g *gen) dur() *time.Duration {
	if !g.maybe() {
		return nil
	}
	return record.Dur(time.Duration(g.i64()))
}

// udur is dur never below zero, as most duration columns hold.
func (g *gen) udur() *time.Duration {
	d := g.dur()
	if d != nil && *d < 0 {
		*d = -(*d + 1)
	}
	return d
}

// udurAlways is udur that is never missing.
func (g *gen) udurAlways() *time.Duration {
	d := time.Duration(g.i64())
	if d < 0 {
		d = -(d + 1)
	}
	return &d
}

// pick returns one of values, which a column that allows only those holds.
func pick[S ~string](g *gen, values []S) S { return values[g.u64()%uint64(len(values))] }

func (g *gen) optInt() *int {
	if !g.maybe() {
		return nil
	}
	return record.Int(g.int())
}
func (g *gen) time() time.Time {
	if !g.maybe() {
		return time.Time{}
	}
	// Years 1970..2200, any nanosecond.
	return time.Unix(0, 0).Add(time.Duration(g.u64() % uint64(230*365*24*time.Hour))).UTC()
}

func genRequest(g *gen) record.Request {
	return record.Request{
		ConfigID: g.s(), ServerID: g.s(), Seq: g.int(), Phase: pick(g, []record.Phase{record.PhaseFirst, record.PhaseWarmup, record.PhaseMeasure}),
		Rep: g.int(), Start: g.time(), Status: pick(g, []record.Status{record.StatusOK, record.StatusFailed}),
		ErrorClass: pick(g, errorClasses), HTTPStatus: g.int(),
		ConnReused: g.bool(), WroteRequest: g.udur(), FirstByte: g.udur(), TTFT: g.udur(), LastText: g.udur(), E2E: g.udur(),
		TPOTEvent: g.udur(), TPOTToken: g.udur(), TPOTTokenExact: g.bool(), ITLMedian: g.udur(), ITLMax: g.udur(),
		Events: g.int(), TextEvents: g.int(), OutputTokens: g.optInt(),
		TokenSource: pick(g, []record.TokenSource{record.SourceNone, record.SourceTokenIDs, record.SourceUsageCont, record.SourceUsage,
			record.SourceTokenize, record.SourceTiktoken}),
		TokensFromIDs: g.optInt(), TokensFromUsage: g.optInt(), TokensFromTokenize: g.optInt(), TokensFromTiktoken: g.optInt(),
		TiktokenEncoding: g.s(), PromptTokensRequested: g.optInt(), PromptTokensReported: g.optInt(), MaxTokens: g.int(),
		FinishReason: g.s(), ContinuousUsage: g.bool(), ReturnTokenIDs: g.bool(), Cache: g.s(), CacheReset: g.bool(),
		LoadMode: pick(g, []record.LoadMode{record.LoadNone, record.LoadClosed, record.LoadOpen}), Concurrency: g.int(),
		Rate: g.fixed6(), Scheduled: g.udur(), SendLag: g.dur(), CapWait: g.udur(), InFlight: g.int(),
	}
}

// fixed6 returns a number with at most six decimals, which a float column keeps exactly.
func (g *gen) fixed6() float64 { return float64(g.i64()%(1<<52)) / 1e6 }

// roundTrip encodes rows with enc, scans them back with scan, and returns what came back.
func roundTrip[T any](t *testing.T, rows []T, enc func(io.Writer) interface{ Encode(*T) error },
	scan func(io.Reader, string) *Scanner[T], header func(io.Writer) error) []T {
	t.Helper()
	var buf bytes.Buffer
	if header != nil {
		if err := header(&buf); err != nil {
			t.Fatal(err)
		}
	}
	e := enc(&buf)
	for i := range rows {
		if err := e.Encode(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	s := scan(bytes.NewReader(buf.Bytes()), "file")
	var got []T
	for s.Scan() {
		got = append(got, s.Record())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("scan back: %v\n%s", err, buf.Bytes())
	}
	return got
}

func FuzzRequestsRoundTrip(f *testing.F) {
	f.Add([]byte{}, "c1", "s0", "first")
	f.Add(bytes.Repeat([]byte{0xff, 1, 2, 3, 0x80, 0, 7, 9}, 40), "cfg,with \"quotes\"", "line\nbreak", "\\")
	f.Add(bytes.Repeat([]byte{3, 0x10, 0xee}, 100), "", "\xff", " lead")
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, s3 string) {
		g := &gen{b: b, str: []string{s1, s2, s3, "ok", ""}}
		var rows []record.Request
		for i := 0; i < 3; i++ {
			rows = append(rows, genRequest(g))
		}
		got := roundTrip(t, rows, func(w io.Writer) interface {
			Encode(*record.Request) error
		} {
			return RequestsCSV.NewEncoder(w)
		}, RequestsCSV.NewScanner, nil)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, rows)
		}
	})
}

func FuzzEventsRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3}, "c1-0")
	f.Add(bytes.Repeat([]byte{0x80, 0xff, 0}, 30), "id\twith\ttabs")
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		g := &gen{b: b, str: []string{id}}
		var rows []EventRow
		for i := 0; i < 4; i++ {
			rows = append(rows, EventRow{RequestID: g.s(), Event: record.Event{Seq: g.int(), SinceT0: *g.udurAlways(),
				Bytes: g.int(), TextLen: g.int(), Tokens: g.optInt(), Text: g.bool()}})
		}
		got := roundTrip(t, rows, func(w io.Writer) interface{ Encode(*EventRow) error } { return EventsCSV.NewEncoder(w) },
			EventsCSV.NewScanner, nil)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, rows)
		}
	})
}

func FuzzServersRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3}, "s0", "vllm", "0.6.3")
	f.Fuzz(func(t *testing.T, b []byte, id, engine, version string) {
		g := &gen{b: b, str: []string{id, engine, version, ""}}
		var rows []ServerInfo
		for i := 0; i < 3; i++ {
			s := ServerInfo{ServerID: g.s(), Resume: g.int(), Engine: g.s(), EngineVersion: g.s(), Model: g.s(),
				BootStart: g.time(), ExitCode: g.optInt(), ExitSignal: g.s(), LogFile: g.s()}
			if g.maybe() {
				// Whole microseconds below 2³³ s, which six decimals hold exactly.
				x := float64(g.u64()%(1<<52)) / 1e6
				s.BootSeconds = &x
			}
			rows = append(rows, s)
		}
		got := roundTrip(t, rows, func(w io.Writer) interface{ Encode(*ServerInfo) error } { return ServersCSV.NewEncoder(w) },
			ServersCSV.NewScanner, nil)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, rows)
		}
	})
}

func FuzzTextsRoundTrip(f *testing.F) {
	f.Add([]byte{1}, "The quick\nbrown fox", "c1", "connection refused")
	f.Add([]byte{9, 9}, "\u2028<&>\"", "", "")
	f.Fuzz(func(t *testing.T, b []byte, text, cfg, msg string) {
		if !utf8Valid(text, cfg, msg) {
			t.Skip("JSON holds text as UTF-8; invalid bytes become U+FFFD by design")
		}
		g := &gen{b: b}
		outs := []OutputRow{{RequestID: RequestID(cfg, 0), ConfigID: cfg, Seq: g.int(), Text: text}}
		got := roundTrip(t, outs, func(w io.Writer) interface{ Encode(*OutputRow) error } { return OutputsJSONL.NewEncoder(w) },
			OutputsJSONL.NewScanner, nil)
		if !reflect.DeepEqual(got, outs) {
			t.Fatalf("outputs round trip differs:\n got %+v\nwant %+v", got, outs)
		}
		errs := []ErrorRow{{RequestID: cfg, ConfigID: cfg, Seq: g.int(), ErrorClass: record.ErrorClass(text), Error: msg}}
		gotE := roundTrip(t, errs, func(w io.Writer) interface{ Encode(*ErrorRow) error } { return ErrorsJSONL.NewEncoder(w) },
			ErrorsJSONL.NewScanner, nil)
		if !reflect.DeepEqual(gotE, errs) {
			t.Fatalf("errors round trip differs:\n got %+v\nwant %+v", gotE, errs)
		}
	})
}

func utf8Valid(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

func FuzzConfigsRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2}, "request.max_tokens", "64", "server.dtype")
	f.Add([]byte{0, 7, 3}, "label", "a,b", "LABEL")
	f.Fuzz(func(t *testing.T, b []byte, path1, val, path2 string) {
		g := &gen{b: b, str: []string{val, "16", "half", ""}}
		paths := []string{path1, path2, "request.prompt_tokens"}
		var rows []ConfigRow
		for i := 0; i < 3; i++ {
			c := ConfigRow{Index: g.int(), ID: g.s(), ServerID: g.s(), Label: g.s()}
			for _, p := range paths {
				if g.maybe() {
					c.Axes = append(c.Axes, experiment.AxisValue{Path: p, Value: g.s()})
				}
			}
			rows = append(rows, c)
		}
		// What comes back: each axis under its column name, in column order, empty values left
		// out (an empty cell is an axis the config does not set), the first of a repeated path.
		tab := configsTable(axisPaths(rows))
		want := make([]ConfigRow, len(rows))
		for i, c := range rows {
			want[i] = ConfigRow{Index: c.Index, ID: c.ID, ServerID: c.ServerID, Label: c.Label}
			for _, col := range tab.cols[len(configsFixed()):] {
				if v, _ := unescapeCell(col.get(&rows[i])); v != "" {
					want[i].Axes = append(want[i].Axes, experiment.AxisValue{Path: col.Name, Value: v})
				}
			}
		}
		var buf bytes.Buffer
		if err := ConfigsCSV.Write(&buf, rows); err != nil {
			t.Fatal(err)
		}
		s := ConfigsCSV.NewScanner(bytes.NewReader(buf.Bytes()), ConfigsFile)
		var got []ConfigRow
		for s.Scan() {
			got = append(got, s.Record())
		}
		if err := s.Err(); err != nil {
			t.Fatalf("scan back: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v\n%s", got, want, buf.Bytes())
		}
	})
}

func FuzzSummaryRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3}, "max_tokens=64", "n=5: too few samples; really")
	f.Fuzz(func(t *testing.T, b []byte, label, warning string) {
		g := &gen{b: b, str: []string{label, warning, ""}}
		fl := func() float64 {
			if !g.maybe() {
				return math.NaN()
			}
			return float64(g.i64()%(1<<52)) / 1e6
		}
		var rows []SummaryRow
		for i := 0; i < 3; i++ {
			r := SummaryRow{ConfigIndex: g.int(), ConfigID: g.s(), ServerID: g.s(), Label: g.s(), Metric: g.s(),
				NFailed: g.int(), NMissing: g.int(), Summary: stats.Summary{N: g.int(), Min: fl(), Median: fl(), P95: fl(),
					P99: fl(), Max: fl(), Mean: fl(), Stddev: fl(), MedianCILow: fl(), MedianCIHigh: fl(), MedianCILevel: fl()}}
			for j := g.u64() % 3; j > 0; j-- {
				if w := g.s(); w != "" {
					r.Warnings = append(r.Warnings, w)
				}
			}
			rows = append(rows, r)
		}
		got := roundTrip(t, rows, func(w io.Writer) interface{ Encode(*SummaryRow) error } { return SummaryCSV.NewEncoder(w) },
			SummaryCSV.NewScanner, nil)
		if len(got) != len(rows) {
			t.Fatalf("got %d rows", len(got))
		}
		for i := range rows {
			if !sameSummaryRow(got[i], rows[i]) {
				t.Fatalf("row %d differs:\n got %+v\nwant %+v", i, got[i], rows[i])
			}
		}
	})
}

func FuzzLoadRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3}, "rate=10", "open")
	f.Add(bytes.Repeat([]byte{0xff, 1, 2, 3, 0x80, 0, 7, 9}, 40), "a,\"b\"", "closed")
	f.Fuzz(func(t *testing.T, b []byte, label, mode string) {
		g := &gen{b: b, str: []string{label, mode, ""}}
		fl := func() float64 {
			if !g.maybe() {
				return math.NaN()
			}
			return g.fixed6()
		}
		var rows []LoadRow
		for i := 0; i < 3; i++ {
			r := LoadRow{ConfigIndex: g.int(), ConfigID: g.s(), ServerID: g.s(), Label: g.s(), LoadMode: record.LoadMode(g.s()),
				Concurrency: g.int(), TargetRate: fl(), Measured: g.int(), Completed: g.int(), Failed: g.int(),
				Window: time.Duration(g.i64()%(1<<52)) * time.Microsecond, AchievedRate: fl(), OutputTokensPerS: fl(),
				SendLagP50: g.dur(), SendLagP99: g.dur(), InFlightMax: g.int(), Good: g.optInt(), Goodput: fl(), SLOAttained: fl(),
				Server: LoadServer{Requests: g.optInt(), TTFTMean: g.dur(), E2EMean: g.dur(), QueueMean: g.dur(), PrefillMean: g.dur(),
					DecodeMean: g.dur(), PromptTokens: g.optInt(), GenerationTokens: g.optInt(), CacheQueries: g.optInt(),
					CacheHits: g.optInt(), ClientOverheadMean: g.dur()}}
			rows = append(rows, r)
		}
		got := roundTrip(t, rows, func(w io.Writer) interface{ Encode(*LoadRow) error } { return LoadCSV.NewEncoder(w) },
			LoadCSV.NewScanner, nil)
		if len(got) != len(rows) {
			t.Fatalf("got %d rows", len(got))
		}
		for i := range rows {
			if !sameLoadRow(got[i], rows[i]) {
				t.Fatalf("row %d differs:\n got %+v\nwant %+v", i, got[i], rows[i])
			}
		}
	})
}

// sameSummaryRow compares rows with NaN equal to NaN.
func sameSummaryRow(a, b SummaryRow) bool {
	fa := []float64{a.Min, a.Median, a.P95, a.P99, a.Max, a.Mean, a.Stddev, a.MedianCILow, a.MedianCIHigh, a.MedianCILevel}
	fb := []float64{b.Min, b.Median, b.P95, b.P99, b.Max, b.Mean, b.Stddev, b.MedianCILow, b.MedianCIHigh, b.MedianCILevel}
	for i := range fa {
		if !(fa[i] == fb[i] || math.IsNaN(fa[i]) && math.IsNaN(fb[i])) {
			return false
		}
	}
	a.Summary, b.Summary = stats.Summary{N: a.N, Warnings: a.Warnings}, stats.Summary{N: b.N, Warnings: b.Warnings}
	return reflect.DeepEqual(a, b)
}

func FuzzManifestRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2}, "golden-sweep", "--hf-token=x", "HF_TOKEN")
	f.Fuzz(func(t *testing.T, b []byte, name, arg, env string) {
		if !utf8Valid(name, arg, env) {
			t.Skip("JSON holds text as UTF-8")
		}
		g := &gen{b: b, str: []string{name, arg, env}}
		_, configs := testExperiment()
		configs[0].Label = g.s()
		configs[0].Server.Args = []string{g.s(), g.s()}
		configs[0].Server.Env = map[string]string{env: g.s()}
		end := g.time()
		m := Manifest{SchemaVersion: FormatVersion, Status: StatusInterrupted, Runner: RunnerInfo{Version: g.s()},
			Command: redact.Args([]string{g.s(), g.s()}), Experiment: ExperimentFile{Name: g.s(), SHA256: SHA256([]byte(name)), Source: arg},
			Configs: redactConfigs(configs), Servers: []ServerInfo{{ServerID: g.s(), Argv: redact.Args([]string{arg, g.s()}), ExitCode: g.optInt()}},
			Machine: testMachine, Process: Process{PID: g.int()}, Start: g.time(), End: &end, Resumes: []time.Time{g.time()}}
		dir := t.TempDir()
		if err := writeManifest(dir, &m); err != nil {
			t.Fatal(err)
		}
		got, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		w, _ := json.Marshal(&m)
		if !bytes.Equal(a, w) {
			t.Fatalf("manifest round trip differs:\n got %s\nwant %s", a, w)
		}
		if !got.Start.Equal(m.Start) || !got.End.Equal(*m.End) {
			t.Fatalf("times differ: %v %v", got.Start, got.End)
		}
	})
}

// FuzzScanners feeds arbitrary bytes to every scanner: none may panic, every error must name
// the file and a line, and rows that scan must encode and scan back to themselves.
func FuzzScanners(f *testing.F) {
	var buf bytes.Buffer
	e := RequestsCSV.NewEncoder(&buf)
	_, configs := testExperiment()
	r := fakeRequest(configs[0], 3)
	e.Encode(&r)
	f.Add(buf.Bytes())
	f.Add([]byte("schema_version,request_id\n1,x\n"))
	f.Add([]byte("schema_version,request_id,event_seq,since_t0_ms,wire_bytes,text_bytes,tokens,is_text\n1,a-0,0,1.5,10,2,,true\n1,a-0,1"))
	f.Add([]byte(`{"schema_version":1,"request_id":"a-0","text":"hi"}` + "\n" + `{"schema_version":2}`))
	f.Add([]byte("\"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScanner(t, data, RequestsCSV.NewScanner, func(w io.Writer) interface{ Encode(*record.Request) error } { return RequestsCSV.NewEncoder(w) })
		checkScanner(t, data, EventsCSV.NewScanner, func(w io.Writer) interface{ Encode(*EventRow) error } { return EventsCSV.NewEncoder(w) })
		checkScanner(t, data, ServersCSV.NewScanner, func(w io.Writer) interface{ Encode(*ServerInfo) error } { return ServersCSV.NewEncoder(w) })
		checkScanner(t, data, SummaryCSV.NewScanner, nil)
		checkScanner(t, data, LoadCSV.NewScanner, nil)
		checkScanner(t, data, ConfigsCSV.NewScanner, nil)
		checkScanner(t, data, OutputsJSONL.NewScanner, nil)
		checkScanner(t, data, ErrorsJSONL.NewScanner, nil)
		decodeManifest(data, "manifest.json")
	})
}

func checkScanner[T any](t *testing.T, data []byte, scan func(io.Reader, string) *Scanner[T],
	enc func(io.Writer) interface{ Encode(*T) error }) {
	s := scan(bytes.NewReader(data), "f.csv")
	var rows []T
	for s.Scan() {
		rows = append(rows, s.Record())
		if s.Line() < 1 {
			t.Fatalf("row at line %d", s.Line())
		}
	}
	if err := s.Err(); err != nil && !strings.HasPrefix(err.Error(), "f.csv:") {
		t.Fatalf("error does not name the file and line: %v", err)
	}
	if enc == nil || len(rows) == 0 || s.Err() != nil {
		return
	}
	got := roundTrip(t, rows, enc, scan, nil)
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("rows scanned from the input do not survive a round trip:\n got %+v\nwant %+v", got, rows)
	}
}
