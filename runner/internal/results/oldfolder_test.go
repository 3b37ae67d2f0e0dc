package results

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// loadColumns are the columns that requests.csv gained for load points.
var loadColumns = []string{"load_mode", "concurrency", "rate_rps", "scheduled_ms", "send_lag_ms", "cap_wait_ms", "in_flight"}

// gpuColumns came next, for GPU telemetry, and promptColumns last.
var (
	gpuColumns    = []string{"gpu_sm_clock_mean_mhz", "gpu_temp_max_c", "gpu_throttled"}
	promptColumns = []string{"prompt_built"}
)

// serverColumns are the columns that requests.csv gained for the server's own timings, after
// the load columns.
var serverColumns = []string{"server_ttft_ms", "server_e2e_ms", "server_queue_ms", "server_prefill_ms",
	"server_decode_ms", "server_prompt_tokens", "server_generation_tokens", "prefix_cache_queries",
	"prefix_cache_hits", "client_overhead_ms", "cache_hit_after_reset"}

// stripLoadColumns rewrites dir/requests.csv as a runner written before the load columns
// existed would have left it (without the server and GPU columns, which came later still), and
// returns the bytes it wrote.
func stripLoadColumns(t *testing.T, dir string) []byte {
	t.Helper()
	return stripTrailingColumns(t, dir, slices.Concat(loadColumns, serverColumns, gpuColumns, promptColumns))
}

// stripTrailingColumns removes cols, which must be the last columns of dir/requests.csv, and
// returns the bytes it wrote.
func stripTrailingColumns(t *testing.T, dir string, cols []string) []byte {
	t.Helper()
	path := filepath.Join(dir, RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(recs[0]) - len(cols)
	if !reflect.DeepEqual(recs[0][n:], cols) {
		t.Fatalf("requests.csv ends with %q, want %q", recs[0][n:], cols)
	}
	for i := range recs {
		recs[i] = recs[i][:n]
	}
	old := encodeCSV(recs...)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	return old
}

// TestReadFolderWithoutServerColumns reads a folder written before requests.csv had the
// server-side columns: its rows read as requests whose server said nothing.
func TestReadFolderWithoutServerColumns(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	want, err := ReadRequests(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	stripTrailingColumns(t, f.Dir(), slices.Concat(serverColumns, gpuColumns, promptColumns))
	got, err := ReadRequests(f.Dir())
	if err != nil {
		t.Fatalf("folder without the server columns: %v", err)
	}
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.ServerTTFT != nil || r.PrefixCacheHits != nil || r.ClientOverhead != nil || r.CacheHitAfterReset {
			t.Fatalf("request %s has server fields: %+v", RequestID(r.ConfigID, r.Seq), r)
		}
		w := want[i]
		w.ServerTTFT, w.ServerE2E, w.ServerQueue, w.ServerPrefill, w.ServerDecode = nil, nil, nil, nil, nil
		w.ServerPromptTokens, w.ServerGenerationTokens, w.PrefixCacheQueries, w.PrefixCacheHits = nil, nil, nil, nil
		w.ClientOverhead, w.CacheHitAfterReset = nil, false
		if !reflect.DeepEqual(r, w) {
			t.Fatalf("request %s differs beyond its server fields", RequestID(r.ConfigID, r.Seq))
		}
	}
}

// TestReadFolderWithoutLoadColumns reads a folder written before requests.csv had the load
// columns: its rows read as requests without a load section, and its summary is unchanged.
func TestReadFolderWithoutLoadColumns(t *testing.T) {
	f, _ := writeFolder(t, t.TempDir())
	want, err := ReadRequests(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	stripLoadColumns(t, f.Dir())
	got, err := ReadRequests(f.Dir())
	if err != nil {
		t.Fatalf("folder without the load columns: %v", err)
	}
	if len(got) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("rows differ after dropping the (empty) load columns")
	}
	for _, r := range got {
		if r.LoadMode != record.LoadNone || r.SendLag != nil || r.Scheduled != nil || r.InFlight != 0 || r.GPUThrottled != nil || r.GPUSMClockMeanMHz != nil {
			t.Fatalf("request %s has load fields: %+v", RequestID(r.ConfigID, r.Seq), r)
		}
	}
}

// TestResumeFolderWithoutLoadColumns resumes an interrupted folder written before the load
// columns existed: requests.csv is rewritten with the current header, the rows it held are
// kept exactly, and the rows the resumed run appends read back with their load fields.
func TestResumeFolderWithoutLoadColumns(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	all := plan(configs)
	for _, r := range all[:5] {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	f.abandon()
	old := stripLoadColumns(t, dir)

	g, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if done.Len() != 5 {
		t.Fatalf("resume found %d requests, want 5", done.Len())
	}
	b, err := os.ReadFile(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Join(RequestsCSV.header(), ",") + "\n"
	if !bytes.HasPrefix(b, []byte(header)) || bytes.Count(b, []byte("\n")) != bytes.Count(old, []byte("\n")) {
		t.Fatalf("requests.csv after resume:\n%s", b)
	}
	loaded := all[5]
	loaded.LoadMode, loaded.Concurrency, loaded.InFlight = record.LoadClosed, 2, 2
	loaded.Scheduled, loaded.SendLag = record.Dur(0), record.Dur(1500*time.Nanosecond)
	if err := g.Append(loaded); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 5 || !reflect.DeepEqual(got[:5], all[:5]) {
		t.Errorf("the rows written before the resume changed")
	}
	if len(got) != 6 || got[5].LoadMode != record.LoadClosed || got[5].SendLag == nil || *got[5].SendLag != 1500*time.Nanosecond {
		t.Errorf("the appended row reads back as %+v", got[len(got)-1])
	}
}
