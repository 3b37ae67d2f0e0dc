package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes the loader panic, that a failure is always a non-empty
// list of located errors, and that a file it accepts always expands into configs with a
// resolved prompt and distinct ids.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "experiments", "*.yaml"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, tc := range validationCases {
		f.Add([]byte(tc.yaml))
	}
	f.Add([]byte(head + okServer + okRequest + "matrix:\n  request.max_tokens: [1, 2]\n  include: [{request.seed: 1}]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse("f.yaml", data)
		if err != nil {
			if e != nil {
				t.Fatal("Parse returned an experiment with an error")
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T %q is not a non-empty ErrorList", err, err)
			}
			for _, x := range list {
				if x.File != "f.yaml" || x.Line < 1 || x.Col < 1 || x.Msg == "" {
					t.Fatalf("error without a position or message: %+v", x)
				}
			}
			return
		}
		cfgs, err := e.Expand()
		if err != nil {
			t.Fatalf("Parse accepted a file that Expand rejects: %v", err)
		}
		if len(cfgs) == 0 {
			t.Fatal("no configs")
		}
		seen := map[string]bool{}
		for _, c := range cfgs {
			if seen[c.ID] {
				t.Fatalf("duplicate id %s", c.ID)
			}
			seen[c.ID] = true
			if (c.Request.Prompt == "") == (c.Request.PromptTokens == 0) || c.Request.MaxTokens < 1 {
				t.Fatalf("config %s has no single prompt or no max_tokens: %+v", c.Label, c.Request)
			}
		}
	})
}
