package experiment

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPromptFloorWarnings checks that a prompt_tokens below the simulator's known floor is
// warned of, on its route, and that a length at the floor, or on an engine whose floor is not
// known, is not.
func TestPromptFloorWarnings(t *testing.T) {
	src := `version: 1
name: floor
server:
  engine: sim
request:
  max_tokens: 4
matrix:
  request.api: [completions, chat]
  request.prompt_tokens: [3, 4, 9, 10]
`
	e, err := Parse(filepath.Join(t.TempDir(), "floor.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	got := PromptFloorWarnings(cfgs)
	want := []string{
		"prompt_tokens 3 is below the 4 tokens engine sim bills for its shortest completions prompt",
		"prompt_tokens 3 is below the 10 tokens engine sim bills for its shortest chat prompt",
		"prompt_tokens 4 is below the 10 tokens engine sim bills for its shortest chat prompt",
		"prompt_tokens 9 is below the 10 tokens engine sim bills for its shortest chat prompt",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no warning %q in %q", w, got)
		}
	}
	for _, c := range cfgs {
		c.Server.Engine = "vllm"
		if w := PromptFloorWarnings([]Config{c}); len(w) != 0 {
			t.Errorf("a vllm server, whose floor depends on its model, warned %q", w)
		}
	}
}
