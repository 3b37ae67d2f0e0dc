package export

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// TestAxisColumnTypes checks that each axis column of configs.csv has its field's type, in
// datapackage.json and in the Parquet file: an integer axis is an integer, a number a float
// (written with a decimal point even where the value is whole), a bool a bool, and a string
// or a duration a string.
func TestAxisColumnTypes(t *testing.T) {
	exp := &experiment.Experiment{Version: 1, Name: "axes-test", Source: []byte("version: 1\nname: axes-test\n")}
	var configs []experiment.Config
	for i := range 2 {
		configs = append(configs, experiment.Config{ID: fmt.Sprintf("c%d-aaaa", i), ServerID: "s0-bbbb", Index: i,
			Server: experiment.Server{Engine: "sim", Model: "tiny"}, Request: experiment.Request{API: "chat", MaxTokens: 4},
			Axes: []experiment.AxisValue{
				{Path: "request.max_tokens", Value: fmt.Sprint(4 * (i + 1))},
				{Path: "load.rate", Value: []string{"2", "0.5"}[i]},
				{Path: "request.ignore_eos", Value: []string{"true", "false"}[i]},
				{Path: "server.model", Value: "tiny"},
				{Path: "server.ready_timeout", Value: "2m0s"},
			}})
	}
	f, err := results.Create(t.TempDir(), exp, configs, results.RunInfo{RunnerVersion: "test", Start: t0,
		Machine: &results.Machine{Hostname: "h"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(results.StatusComplete); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		kind    results.Kind
		json    string
		parquet string
	}{
		"request_max_tokens":   {results.KindInt, "integer", "optional INT64 INT(64,true)"},
		"load_rate":            {results.KindFloat, "number", "optional DOUBLE"},
		"request_ignore_eos":   {results.KindBool, "boolean", "optional BOOLEAN"},
		"server_model":         {results.KindString, "string", "optional BYTE_ARRAY STRING"},
		"server_ready_timeout": {results.KindString, "string", "optional BYTE_ARRAY STRING"},
	}
	schema, err := results.ReadSchema(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, fs := range schema {
		if fs.File != results.ConfigsFile {
			continue
		}
		for _, c := range fs.Columns {
			if w, ok := want[c.Name]; ok {
				seen++
				if c.Kind != w.kind {
					t.Errorf("datapackage.json: %s is %s, want %s", c.Name, c.Kind, w.kind)
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("datapackage.json describes %d of the %d axis columns", seen, len(want))
	}
	out := filepath.Join(t.TempDir(), "parquet")
	if _, err := Parquet(f.Dir(), out); err != nil {
		t.Fatal(err)
	}
	pf, rows := readParquet(t, filepath.Join(out, "configs.parquet"))
	for name, w := range want {
		col, ok := pf.Schema().Lookup(name)
		if !ok {
			t.Errorf("configs.parquet has no column %s", name)
			continue
		}
		if got := parquetType(col.Node.(parquet.Field)); got != w.parquet {
			t.Errorf("configs.parquet: %s is %s, want %s", name, got, w.parquet)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("configs.parquet: %d rows, want 2", len(rows))
	}
	rate, _ := pf.Schema().Lookup("load_rate")
	tokens, _ := pf.Schema().Lookup("request_max_tokens")
	for i, want := range []float64{2, 0.5} {
		if got := rows[i][rate.ColumnIndex].Double(); got != want {
			t.Errorf("configs.parquet row %d: load_rate %v, want %v", i, got, want)
		}
		if got := rows[i][tokens.ColumnIndex].Int64(); got != int64(4*(i+1)) {
			t.Errorf("configs.parquet row %d: request_max_tokens %v, want %d", i, got, 4*(i+1))
		}
	}
}
