package experiment

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
)

// TestEngineTableMatchesFormat checks that the engine table speaks of the server fields this
// package decodes, and that every default it gives is a valid value of its field.
func TestEngineTableMatchesFormat(t *testing.T) {
	want := slices.DeleteFunc(slices.Clone(serverKeys), func(k string) bool { return k == "engine" })
	if !reflect.DeepEqual(enginefacts.ServerFields, want) {
		t.Errorf("enginefacts.ServerFields = %v; the decoder's server keys, less engine, are %v", enginefacts.ServerFields, want)
	}
	if !reflect.DeepEqual(Engines, enginefacts.Names()) || fieldByPath("server.engine").enum == nil ||
		!reflect.DeepEqual(fieldByPath("server.engine").enum, enginefacts.Names()) {
		t.Errorf("server.engine accepts %v; the engine table has %v", fieldByPath("server.engine").enum, enginefacts.Names())
	}
	for _, e := range enginefacts.All() {
		for name, v := range e.Defaults {
			f := fieldByPath("server." + name)
			if f == nil || f.kind != kindString {
				t.Errorf("engine %s: a default for server.%s, which is not a string field", e.Name, name)
				continue
			}
			if _, msg := f.normalize(v); msg != "" {
				t.Errorf("engine %s: the default of server.%s %s", e.Name, name, msg)
			}
		}
	}
}

// TestSchemaMatchesEngineTable checks the schema against the engine table: its engine enum and
// default, and, in the descriptions editors show, which engines each server field is for, which
// engines require server.model, the ready timeouts, the defaults and which engines cannot reset
// their prefix cache. An engine added to the table and not to the schema fails here.
func TestSchemaMatchesEngineTable(t *testing.T) {
	doc := schemaDoc(t)
	defs := obj(t, doc, "definitions")
	server := obj(t, doc, "properties", "server", "properties")
	// def returns the schema of a server field: its definition, or for the fields that have
	// none (args, env, command) the property itself.
	def := func(name string) map[string]any {
		if d, ok := defs["server."+name]; ok {
			return d.(map[string]any)
		}
		return obj(t, server, name)
	}
	description := func(name string) string {
		s, _ := def(name)["description"].(string)
		return s
	}

	eng := def("engine")
	var enum []string
	for _, v := range eng["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	if !reflect.DeepEqual(enum, enginefacts.Names()) {
		t.Errorf("schema server.engine enum %v; the engine table has %v", enum, enginefacts.Names())
	}
	if eng["default"] != enginefacts.Default {
		t.Errorf("schema server.engine default %v; the engine table's is %s", eng["default"], enginefacts.Default)
	}
	for _, name := range enginefacts.Names() {
		if !strings.Contains(description("engine"), name) {
			t.Errorf("the description of server.engine does not mention engine %s", name)
		}
	}

	var booting []string
	for _, e := range enginefacts.All() {
		if e.Boots {
			booting = append(booting, e.Name)
		}
	}
	onlyRE := regexp.MustCompile(`Engines? [a-z, ]+ only|Engines that boot a server only`)
	for _, name := range enginefacts.ServerFields {
		takers := enginefacts.Taking(name)
		var want string
		switch {
		case len(takers) == len(enginefacts.Names()):
		case slices.Equal(takers, booting):
			want = "Engines that boot a server only"
		case len(takers) == 1:
			want = "Engine " + takers[0] + " only"
		default:
			want = "Engines " + prose(takers) + " only"
		}
		d := description(name)
		if want == "" {
			if m := onlyRE.FindString(d); m != "" {
				t.Errorf("server.%s: every engine takes it, but its description says %q", name, m)
			}
		} else if !strings.Contains(d, want) {
			t.Errorf("server.%s: its description does not say %q (the engine table's takers: %v): %q", name, want, takers, d)
		}
	}

	// server.model: required, or defaulted.
	var defaulted []string
	var modelDefault string
	for _, e := range enginefacts.All() {
		if v, ok := e.Defaults["model"]; ok {
			defaulted, modelDefault = append(defaulted, e.Name), v
		}
	}
	if want := fmt.Sprintf("Required for every engine but %s, whose default is %q", prose(defaulted), modelDefault); !strings.Contains(description("model"), want) {
		t.Errorf("server.model: its description does not say %q", want)
	}

	// server.ready_timeout: the common default, then the engines that differ.
	var shorter []string
	var other time.Duration
	for _, e := range enginefacts.All() {
		if e.ReadyTimeout != enginefacts.DefaultReadyTimeout {
			shorter, other = append(shorter, e.Name), e.ReadyTimeout
		}
	}
	want := fmt.Sprintf("Default %s; %s: %s.", shortDuration(enginefacts.DefaultReadyTimeout), prose(shorter), shortDuration(other))
	if !strings.Contains(description("ready_timeout"), want) {
		t.Errorf("server.ready_timeout: its description does not say %q", want)
	}

	// The string defaults: one value per field, which the schema gives as its default.
	for _, name := range enginefacts.ServerFields {
		var values []string
		for _, e := range enginefacts.All() {
			if v, ok := e.Defaults[name]; ok && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
		if len(values) == 0 || name == "model" {
			continue
		}
		if got := def(name)["default"]; len(values) != 1 || got != values[0] {
			t.Errorf("server.%s: schema default %v; the engine table's defaults are %q", name, got, values)
		}
	}

	// cache: which engines cannot reset, and so default to keep.
	var cannot []string
	for _, e := range enginefacts.All() {
		if !e.CanReset {
			cannot = append(cannot, e.Name)
		}
	}
	cache, _ := obj(t, defs, "cache")["description"].(string)
	if want := prose(cannot) + " cannot"; !strings.Contains(cache, want) {
		t.Errorf("cache: its description does not say %q", want)
	}
}

// prose joins names as a sentence does: "a", "a and b", "a, b and c".
func prose(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// shortDuration writes a duration as the schema does: 10m, 30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TestSimTakesDtype: an experiment written for vLLM that sets server.dtype runs on the simulator
// as a dry run, which takes --dtype as vLLM does (its preset passes it on).
func TestSimTakesDtype(t *testing.T) {
	cfgs := mustExpand(t, head+"server:\n  engine: sim\n  dtype: half\n"+okRequest)
	if len(cfgs) != 1 || cfgs[0].Server.Dtype != "half" {
		t.Errorf("configs %+v; want dtype half on engine sim", cfgs)
	}
	cfgs = mustExpand(t, head+"server:\n  engine: sim\n"+okRequest+"matrix:\n  server.dtype: [bfloat16, float]\n")
	if len(cfgs) != 2 || cfgs[0].Server.Dtype != "bfloat16" || cfgs[1].Server.Dtype != "float" {
		t.Errorf("configs %+v; want dtype bfloat16 and float on engine sim", cfgs)
	}
}
