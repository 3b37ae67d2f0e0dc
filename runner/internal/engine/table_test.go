package engine

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// TestPresetsMatchTable checks that every engine of the table has a preset and every preset an
// engine of the table.
func TestPresetsMatchTable(t *testing.T) {
	t.Parallel()
	var names []string
	for n := range builtin {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(enginefacts.Names()))
	if !slices.Equal(names, want) {
		t.Errorf("presets for %v; the engine table has %v", names, want)
	}
}

// TestPresetsAgreeWithTable runs every preset with each server field set in turn and checks
// what the table says of it: a field the preset does not pass on is noted, one it passes is
// not, an engine the table says boots has a command line to run, and a reset that needs a
// variable gets it.
func TestPresetsAgreeWithTable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(OllamaEnv, self) // any executable: the ollama preset only looks it up
	target := Target{Host: "127.0.0.1", Port: 1, Executable: self, Dir: t.TempDir()}
	base := experiment.Server{Model: "m", Command: []string{"srv", "{port}"}, URL: "http://127.0.0.1:1"}
	// withField sets one more server field than base.
	withField := map[string]func(s *experiment.Server){
		"model":         func(s *experiment.Server) {},
		"dtype":         func(s *experiment.Server) { s.Dtype = "half" },
		"max_model_len": func(s *experiment.Server) { s.MaxModelLen = 64 },
		"ready_timeout": func(s *experiment.Server) { s.ReadyTimeout = 1 },
		"host":          func(s *experiment.Server) { s.Host = "127.0.0.1" },
		"port":          func(s *experiment.Server) { s.Port = 1 },
		"url":           func(s *experiment.Server) {},
		"api_key_env":   func(s *experiment.Server) { s.APIKeyEnv = "PATH" },
		"entrypoint":    func(s *experiment.Server) { s.Entrypoint = "serve" },
		"ready_path":    func(s *experiment.Server) { s.ReadyPath = "/health" },
		"args":          func(s *experiment.Server) { s.Args = []string{"--x"} },
		"env":           func(s *experiment.Server) { s.Env = map[string]string{"A": "b"} },
		"command":       func(s *experiment.Server) {},
	}
	for _, e := range enginefacts.All() {
		preset := builtin[e.Name]
		if preset == nil {
			continue // TestPresetsMatchTable reports it
		}
		for _, field := range enginefacts.ServerFields {
			set, ok := withField[field]
			if !ok {
				t.Fatalf("the test sets no value for server.%s", field)
			}
			srv := base
			srv.Engine = e.Name
			set(&srv)
			l, err := preset(srv, target)
			if err != nil {
				t.Fatalf("%s with server.%s: %v", e.Name, field, err)
			}
			noted := slices.ContainsFunc(l.Notes, func(n string) bool { return strings.HasPrefix(n, "server."+field+" ") })
			if want := !e.Uses(field) && field != "ready_timeout"; noted != want {
				t.Errorf("engine %s: server.%s noted as ignored: %v, want %v (notes %q)", e.Name, field, noted, want, l.Notes)
			}
			if boots := len(l.Argv) > 0; boots != e.Boots {
				t.Errorf("engine %s: the preset has a command line: %v; the table says it boots: %v", e.Name, boots, e.Boots)
			}
			if e.ResetEnv != "" && l.Env[e.ResetEnv] != "1" {
				t.Errorf("engine %s: the reset needs %s=1, and the preset sets %q", e.Name, e.ResetEnv, l.Env[e.ResetEnv])
			}
		}
	}
}
