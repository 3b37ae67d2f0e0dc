package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/schema"
)

// schemaDoc is the embedded schema decoded as plain JSON.
func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(schema.Experiment, &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	return doc
}

// obj follows keys through nested JSON objects.
func obj(t *testing.T, v any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("schema: %s is not an object", strings.Join(keys, "."))
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("schema: %s is not an object", strings.Join(keys, "."))
	}
	return m
}

// sortedKeys returns an object's keys, sorted.
func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestSchemaCompiles(t *testing.T) {
	if _, err := compiled(); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaMatchesDecoder checks that the schema and the decoder accept the same keys, the same
// axes and the same enumerated values.
func TestSchemaMatchesDecoder(t *testing.T) {
	doc := schemaDoc(t)
	props := obj(t, doc, "properties")
	sections := []struct {
		name string
		got  []string
		want []string
	}{
		{"top level", sortedKeys(props), sorted(topKeys)},
		{"server", sortedKeys(obj(t, props, "server", "properties")), sorted(serverKeys)},
		{"request", sortedKeys(obj(t, props, "request", "properties")), sorted(requestKeys)},
		{"timeouts", sortedKeys(obj(t, props, "timeouts", "properties")), sorted(timeoutKeys)},
		{"matrix", sortedKeys(obj(t, props, "matrix", "properties")), sorted(append(axisPaths(), "include", "exclude"))},
		{"include entries", sortedKeys(obj(t, props, "matrix", "properties", "include", "items", "properties")), sorted(axisPaths())},
		{"prompt entries", sortedKeys(obj(t, props, "request", "properties", "prompts", "items", "properties")), sorted(promptKeys)},
	}
	for _, s := range sections {
		if !reflect.DeepEqual(s.got, s.want) {
			t.Errorf("%s: schema has %v, decoder %v", s.name, s.got, s.want)
		}
	}
	defs := obj(t, doc, "definitions")
	for _, f := range fields {
		if !f.axis && f.path != "repetitions" && f.path != "warmup" {
			continue
		}
		d := obj(t, defs, f.path)
		if f.enum != nil {
			var got []string
			for _, v := range d["enum"].([]any) {
				got = append(got, v.(string))
			}
			if !reflect.DeepEqual(got, f.enum) {
				t.Errorf("%s: schema enum %v, decoder %v", f.path, got, f.enum)
			}
		}
		if f.hasMin {
			if got, _ := d["minimum"].(float64); got != f.min {
				t.Errorf("%s: schema minimum %v, decoder %v", f.path, d["minimum"], f.min)
			}
		}
		if f.hasMax {
			if got, _ := d["maximum"].(float64); got != f.max {
				t.Errorf("%s: schema maximum %v, decoder %v", f.path, d["maximum"], f.max)
			}
		}
	}
}

// TestSchemaDescribesEverything checks that every property of the schema has a description,
// which editors show on hover.
func TestSchemaDescribesEverything(t *testing.T) {
	doc := schemaDoc(t)
	defs := obj(t, doc, "definitions")
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			if _, ok := defs[strings.TrimPrefix(ref, "#/definitions/")]; !ok {
				t.Errorf("%s: $ref %s names no definition", path, ref)
			}
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for k, p := range props {
				if pm, ok := p.(map[string]any); ok {
					if _, isRef := pm["$ref"]; !isRef && pm["description"] == nil {
						t.Errorf("%s.%s has no description", path, k)
					}
				}
				walk(path+"."+k, p)
			}
		}
		for _, k := range []string{"items", "additionalProperties"} {
			walk(path+"."+k, m[k])
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			if alts, ok := m[k].([]any); ok {
				for _, a := range alts {
					walk(path, a)
				}
			}
		}
	}
	walk("", doc)
	for name, d := range defs {
		if obj(t, defs, name)["description"] == nil {
			t.Errorf("definition %s has no description", name)
		}
		walk(name, d)
	}
}

// TestFormatDocDocumentsEveryField checks that the experiment format reference,
// docs/experiments.md, names every field of the format.
func TestFormatDocDocumentsEveryField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	if !strings.HasPrefix(doc, "# Experiment format\n") {
		t.Fatal("docs/experiments.md does not start with \"# Experiment format\"")
	}
	var names []string
	names = append(names, topKeys...)
	names = append(names, serverKeys...)
	names = append(names, requestKeys...)
	names = append(names, orderKeys...)
	names = append(names, "include", "exclude")
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/experiments.md does not document `%s`", n)
		}
	}
}

// yamlBlockAfter returns the first yaml code block of a Markdown text that follows marker.
func yamlBlockAfter(t *testing.T, text, marker string) string {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %q", marker)
	}
	block := text[i:]
	start := strings.Index(block, "```yaml\n") + len("```yaml\n")
	end := strings.Index(block[start:], "```")
	if start < len("```yaml\n") || end < 0 {
		t.Fatalf("%q is not followed by a yaml code block", marker)
	}
	return block[start : start+end]
}

// TestFormatDocExampleIsValid checks the complete example of the experiment format reference,
// docs/experiments.md.
func TestFormatDocExampleIsValid(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Parse("docs/experiments.md", []byte(yamlBlockAfter(t, string(data), "A complete example")))
	if err != nil {
		t.Fatalf("the complete example of docs/experiments.md is invalid:\n%v", err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(cfgs); len(got) != 6 {
		t.Errorf("the complete example expands to %v; want 6 configs (3 prompt lengths × 2 dtypes, less 1, plus 1)", got)
	}
}

// TestReadmeFirstExperimentIsValid checks the first experiment of the README, which a newcomer
// copies: it must be valid, run on the simulator and expand to the configs the README shows.
func TestReadmeFirstExperimentIsValid(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Parse("README.md", []byte(yamlBlockAfter(t, string(data), "## A first experiment")))
	if err != nil {
		t.Fatalf("the README's first experiment is invalid:\n%v", err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"prompt_tokens=16", "prompt_tokens=256"}
	if got := labels(cfgs); !slices.Equal(got, want) {
		t.Errorf("the README's first experiment expands to %v; want %v", got, want)
	}
	for _, c := range cfgs {
		if c.Server.Engine != "sim" {
			t.Errorf("config %s uses engine %q; the first experiment must need nothing installed (sim)", c.Label, c.Server.Engine)
		}
	}
}

// TestFormatDocMixesLoops checks the example of docs/experiments.md that measures closed and
// open loops in one file, and that the error for a config with both names the way it shows.
func TestFormatDocMixesLoops(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	src := head + "server:\n  engine: sim\nrequest:\n  prompt_tokens: 128\ncache: keep\n" + yamlBlockAfter(t, string(data), "both kinds of loop in one file")
	e, err := Parse("docs/experiments.md", []byte(src))
	if err != nil {
		t.Fatalf("the example of both kinds of loop is invalid:\n%v", err)
	}
	cfgs, err := e.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var closed, open int
	for _, c := range cfgs {
		switch {
		case c.Load == nil:
			t.Errorf("config %s is no load point", c.Label)
		case c.Load.Rate > 0:
			open++
		default:
			closed++
		}
	}
	if closed == 0 || open == 0 {
		t.Errorf("the example gives %d closed and %d open loops; want both kinds", closed, open)
	}

	_, err = Parse("t.yaml", []byte(head+okServer+okRequest+"load: {}\nmatrix:\n  load.concurrency: [1, 4]\n  include:\n    - {load.rate: 5}\n"))
	if err == nil || !strings.Contains(err.Error(), "an entry whose axis values match no config") {
		t.Errorf("got %v, want the error to say how include adds a point of the other kind", err)
	}
}
