package export

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestReadersRefuseTheSameValues checks that the folder's reader (summary, diff, report) and
// the export refuse the same requests.csv: a value outside a column's enum, a malformed bool,
// a negative duration and a request given twice, each with the file, line and column.
func TestReadersRefuseTheSameValues(t *testing.T) {
	for _, tc := range []struct {
		name, column, value string
		want                string // what both errors hold
	}{
		{"negative duration", "ttft_ms", "-5.000000", "requests.csv:2: ttft_ms: negative value -5.000000"},
		{"unknown status", "status", "weird", `requests.csv:2: status: unknown value "weird"`},
		{"unknown phase", "phase", "party", `requests.csv:2: phase: unknown value "party"`},
		{"malformed bool", "warmup", "maybe", "requests.csv:2: warmup: "},
		{"request twice", "", "", "requests.csv:3: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFolder(t, true)
			path := filepath.Join(dir, results.RequestsFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(b), "\n")
			if tc.column == "" {
				lines = slices.Insert(lines, 2, lines[1])
			} else {
				header := strings.Split(strings.TrimSuffix(lines[0], "\n"), ",")
				cells := strings.Split(strings.TrimSuffix(lines[1], "\n"), ",")
				cells[slices.Index(header, tc.column)] = tc.value
				lines[1] = strings.Join(cells, ",") + "\n"
			}
			if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			_, rerr := results.ReadAll(dir)
			_, eerr := Parquet(dir, filepath.Join(t.TempDir(), "out"))
			for who, err := range map[string]error{"reader": rerr, "export": eerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want an error containing %q", who, err, tc.want)
				}
			}
		})
	}
}
