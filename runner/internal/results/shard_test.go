package results

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

func TestShardFolder(t *testing.T) {
	exp, configs := testExperiment()
	tests := []struct {
		name    string
		configs int // how many of the test configs the shard holds
		shard   Shard
	}{
		{"a shard with configs", 2, Shard{Index: 1, Count: 3, Fingerprint: "f00d", Source: "JOB_COMPLETION_INDEX", Host: "gpu-7"}},
		{"an empty shard", 0, Shard{Index: 4, Count: 5, Fingerprint: "f00d", Configs: []string{}, Source: "flag", Host: "gpu-9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgs := configs[:tt.configs]
			for _, c := range cfgs {
				tt.shard.Configs = append(tt.shard.Configs, c.ID)
			}
			run := testRunInfo()
			run.Shard = &tt.shard
			f, err := Create(t.TempDir(), exp, cfgs, run)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cfgs {
				for seq := 0; seq < 1+c.Warmup+c.Repetitions; seq++ {
					if err := f.Append(fakeRequest(c, seq)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := f.Close(StatusComplete); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("-shard-%d-of-%d", tt.shard.Index, tt.shard.Count); !strings.HasSuffix(filepath.Base(f.Dir()), want) {
				t.Errorf("folder %s: want a name ending %s", f.Dir(), want)
			}
			man, err := ReadManifest(f.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if man.Status != StatusComplete || man.Shard == nil || !reflect.DeepEqual(*man.Shard, tt.shard) {
				t.Errorf("manifest: status %s, shard %+v; want complete, %+v", man.Status, man.Shard, tt.shard)
			}
			// An ordinary result folder: every file there, with its header, and readable.
			for _, name := range []string{ConfigsFile, RequestsFile, EventsFile, ServersFile, SummaryFile, LoadFile, SchemaFile, OutputsFile, ErrorsFile} {
				b, err := os.ReadFile(filepath.Join(f.Dir(), name))
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if strings.HasSuffix(name, ".csv") && !strings.Contains(string(b), "schema_version") {
					t.Errorf("%s has no header:\n%s", name, b)
				}
			}
			loaded, err := ReadAll(f.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if len(loaded.Requests) != rowsOf(cfgs) {
				t.Errorf("%d requests read back, want %d", len(loaded.Requests), rowsOf(cfgs))
			}
		})
	}
}

// rowsOf returns the rows a run of cfgs writes: every config's first, warm-up and measured
// requests, as the test folders number them.
func rowsOf(cfgs []experiment.Config) int {
	n := 0
	for _, c := range cfgs {
		n += 1 + c.Warmup + c.Repetitions
	}
	return n
}

// TestReadServersWithoutShardColumns reads a servers.csv written before it had the shard and
// host columns.
func TestReadServersWithoutShardColumns(t *testing.T) {
	old := "schema_version,server_id,resume,engine,engine_version,model,boot_start_time,boot_s,exit_code,exit_signal,log_file\n" +
		"1,s0-77aa,0,sim,0.1.0,tiny,2026-11-29T08:12:00.123456789Z,12.500000,0,,logs/s0-77aa.log\n"
	s := ServersCSV.NewScanner(strings.NewReader(old), ServersFile)
	if !s.Scan() {
		t.Fatal(s.Err())
	}
	if got := s.Record(); got.ServerID != "s0-77aa" || got.Shard != nil || got.Host != "" {
		t.Errorf("read %+v", got)
	}
}

// TestResumeMovesShardHost checks that a shard resumed on another machine names that machine
// as its host, so that a merge says where it finished, and keeps the machine it began on.
func TestResumeMovesShardHost(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skip("no hostname here")
	}
	exp, configs := testExperiment()
	run := testRunInfo()
	run.Shard = &Shard{Index: 0, Count: 2, Fingerprint: "f00d", Source: "flag", Host: "gpu-elsewhere-" + host}
	f, err := Create(t.TempDir(), exp, configs, run)
	if err != nil {
		t.Fatal(err)
	}
	f.abandon()
	for i := range 2 {
		g, _, err := Resume(f.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Close(StatusInterrupted); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(f.Dir())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"gpu-elsewhere-" + host}
		if m.Shard.Host != host || !reflect.DeepEqual(m.Shard.EarlierHosts, want) {
			t.Errorf("after resume %d here: shard host %q, earlier %q; want %q, %q", i+1, m.Shard.Host, m.Shard.EarlierHosts, host, want)
		}
	}
}
