package export

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestParquetFindsColumnsByName checks that export reads a requests.csv whose columns are
// reordered and which has a column the format does not know, as the readers of a folder do:
// each column's cells land in its Parquet column, and the unknown one is left out with a note.
func TestParquetFindsColumnsByName(t *testing.T) {
	dir := writeFolder(t, true)
	path := filepath.Join(dir, results.RequestsFile)
	recs := readCSVFile(t, path)
	// Swap two columns and add one at the front, cell by cell.
	i, j := slices.Index(recs[0], "ttft_ms"), slices.Index(recs[0], "seq")
	for _, rec := range recs {
		rec[i], rec[j] = rec[j], rec[i]
	}
	var b strings.Builder
	for n, rec := range recs {
		extra := "x"
		if n == 0 {
			extra = "site_note"
		}
		b.WriteString(extra + "," + strings.Join(rec, ",") + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	rep, err := Parquet(dir, out)
	if err != nil {
		t.Fatalf("export of a requests.csv with reordered and unknown columns: %v", err)
	}
	want := "requests.csv: column site_note is not of this format and is left out of requests.parquet"
	if !slices.Contains(rep.Notes, want) {
		t.Errorf("notes %q lack %q", rep.Notes, want)
	}
	pf, rows := readParquet(t, filepath.Join(out, "requests.parquet"))
	if _, ok := pf.Schema().Lookup("site_note"); ok {
		t.Errorf("requests.parquet has the unknown column")
	}
	seq, _ := pf.Schema().Lookup("seq")
	ttft, _ := pf.Schema().Lookup("ttft_ms")
	if len(rows) != 6 {
		t.Fatalf("requests.parquet: %d rows, want 6", len(rows))
	}
	for n, row := range rows {
		if got := row[seq.ColumnIndex].Int64(); got != int64(n%3) {
			t.Errorf("row %d: seq %d, want %d", n, got, n%3)
		}
		if v := row[ttft.ColumnIndex]; !v.IsNull() && v.Double() < 20 {
			t.Errorf("row %d: ttft_ms %v, want the row's TTFT", n, v.Double())
		}
	}
}

// readCSVFile reads a whole CSV file.
func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
