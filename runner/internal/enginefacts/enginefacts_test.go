package enginefacts

import (
	"slices"
	"testing"
)

// TestTableIsWellFormed checks what every entry must satisfy for validation, defaults and notes
// to be derived from it.
func TestTableIsWellFormed(t *testing.T) {
	if table[0].Name != Default {
		t.Errorf("the first engine is %s; want the default, %s", table[0].Name, Default)
	}
	seen := map[string]bool{}
	for _, e := range table {
		if e.Name == "" || seen[e.Name] {
			t.Errorf("engine %q: empty or listed twice", e.Name)
		}
		seen[e.Name] = true
		lists := []struct {
			what  string
			names []string
		}{{"Fields", e.Fields}, {"Passes", e.Passes}, {"Requires", e.Requires}}
		for _, l := range lists {
			for _, f := range l.names {
				if !slices.Contains(ServerFields, f) {
					t.Errorf("engine %s: %s names %q, which is not a server field", e.Name, l.what, f)
				}
			}
			if len(slices.Compact(slices.Sorted(slices.Values(l.names)))) != len(l.names) {
				t.Errorf("engine %s: %s lists a field twice: %v", e.Name, l.what, l.names)
			}
		}
		for _, f := range e.Requires {
			if !e.Takes(f) {
				t.Errorf("engine %s requires %s, which it does not take", e.Name, f)
			}
			if _, ok := e.Defaults[f]; ok {
				t.Errorf("engine %s requires %s, which has a default", e.Name, f)
			}
		}
		for f, v := range e.Defaults {
			if !e.Takes(f) || v == "" {
				t.Errorf("engine %s: default %s: %q for a field it does not take, or empty", e.Name, f, v)
			}
		}
		if !e.Takes("model") || (!slices.Contains(e.Requires, "model") && e.Defaults["model"] == "") {
			t.Errorf("engine %s: server.model must be taken, and either required or defaulted", e.Name)
		}
		if e.ReadyTimeout <= 0 {
			t.Errorf("engine %s: ready timeout %v", e.Name, e.ReadyTimeout)
		}
		if e.ResetEnv != "" && !e.CanReset {
			t.Errorf("engine %s: a reset that needs %s, but no reset", e.Name, e.ResetEnv)
		}
		for _, f := range bootFields {
			if e.Takes(f) != e.Boots {
				t.Errorf("engine %s: boots %v, takes %s %v", e.Name, e.Boots, f, e.Takes(f))
			}
		}
		if (e.Defaults["host"] != "") != e.Boots {
			t.Errorf("engine %s: boots %v, default host %q", e.Name, e.Boots, e.Defaults["host"])
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name           string
		ok, boots, can bool
		argv           string
	}{
		{name: "vllm", ok: true, boots: true, can: true, argv: "server.args"},
		{name: "llamacpp", ok: true, boots: true, can: true, argv: "server.args"}, // by "cache_prompt": false
		{name: "ollama", ok: true, boots: true, can: true, argv: ""},
		{name: "command", ok: true, boots: true, argv: "server.command or server.args"},
		{name: "endpoint", ok: true, can: true, argv: ""},
		{name: "", ok: false},
		{name: "tgi", ok: false},
	}
	for _, tt := range tests {
		e, ok := Lookup(tt.name)
		if ok != tt.ok || Boots(tt.name) != tt.boots || CanReset(tt.name) != tt.can || e.Argv() != tt.argv {
			t.Errorf("%q: found %v, boots %v, can reset %v, argv %q; want %v, %v, %v, %q",
				tt.name, ok, Boots(tt.name), CanReset(tt.name), e.Argv(), tt.ok, tt.boots, tt.can, tt.argv)
		}
	}
	if got := Taking("dtype"); !slices.Equal(got, []string{"vllm", "sglang", "sim"}) {
		t.Errorf("Taking(dtype) = %v", got)
	}
}

// TestServesMetrics checks that only an engine the table marks is left unscraped: ollama, and
// not an engine the table does not know (a preset registered in code), which may serve one.
func TestServesMetrics(t *testing.T) {
	for name, want := range map[string]bool{"vllm": true, "ollama": false, "endpoint": true, "not-in-table": true} {
		if got := ServesMetrics(name); got != want {
			t.Errorf("ServesMetrics(%q) = %v, want %v", name, got, want)
		}
	}
}
