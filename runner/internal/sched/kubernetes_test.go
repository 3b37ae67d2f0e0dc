package sched

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The manifests' strict decode into the official Kubernetes types, and the comparison of the
// name rules with the official validation, are the tests of the k8scheck module (make
// test-k8s); the tests here hold the rules to the API server's verdicts and words on the names
// that matter most.

func TestNameRules(t *testing.T) {
	const labelWords = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	rules := map[string]func(string) []string{
		"label": DNSLabelProblems, "subdomain": DNSSubdomainProblems, "qualified": QualifiedNameProblems,
		"value": LabelValueProblems, "key": ConfigMapKeyProblems,
	}
	r := strings.Repeat
	for _, c := range []struct {
		rule, in string
		want     []string // the problems' beginnings, in order; none when valid
	}{
		{"label", "sweep-0412", nil},
		{"label", "0", nil},
		{"label", r("a", 63), nil},
		{"label", r("a", 64), []string{"must be no more than 63 characters"}},
		{"label", "", []string{labelWords}},
		{"label", "Sweep_1", []string{labelWords}},
		{"label", "-a", []string{labelWords}},
		{"label", "perf.team", []string{"must not contain dots"}},
		{"label", r("a", 32) + "." + r("b", 32), []string{"must be no more than 63 characters", "must not contain dots"}},
		{"label", "日本", []string{"a lowercase RFC 1123 label"}},
		{"subdomain", "bench-results", nil},
		{"subdomain", "results.team-a", nil},
		{"subdomain", r("a", 253), nil},
		{"subdomain", r("a", 254), []string{"must be no more than 253 characters"}},
		{"subdomain", "Results", []string{"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used"}},
		{"subdomain", "a..b", []string{"a lowercase RFC 1123 subdomain"}},
		{"subdomain", "", []string{"a lowercase RFC 1123 subdomain"}},
		{"qualified", "nvidia.com/gpu", nil},
		{"qualified", "pool", nil},
		{"qualified", "example.com/My_Name.2", nil},
		{"qualified", r("a", 253) + "/" + r("b", 63), nil},
		{"qualified", "a/b/c", []string{"a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}},
		{"qualified", "/gpu", []string{"prefix part must be non-empty"}},
		{"qualified", "Nvidia.com/gpu", []string{"prefix part a lowercase RFC 1123 subdomain"}},
		{"qualified", r("a", 254) + "/b", []string{"prefix part must be no more than 253 bytes"}},
		{"qualified", "nvidia.com/", []string{"name part must be non-empty", "name part must consist of"}},
		{"qualified", r("a", 64), []string{"name part must be no more than 63 bytes"}},
		{"qualified", "gpu.", []string{"name part must consist of"}},
		{"value", "", nil},
		{"value", "Tesla-T4", nil},
		{"value", r("v", 63), nil},
		{"value", r("v", 64), []string{"must be no more than 63 bytes"}},
		{"value", "Tesla T4", []string{"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used"}},
		{"value", "a/b", []string{"a valid label must"}},
		{"key", "prefill-sweep.yaml", nil},
		{"key", "KEY_NAME", nil},
		{"key", ".a", nil},
		{"key", r("k", 254), []string{"must be no more than 253 characters"}},
		{"key", "a b.yaml", []string{"a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used"}},
		{"key", ".", []string{"must not be '.'"}},
		{"key", "..", []string{"must not be '..'"}},
		{"key", "..a", []string{"must not start with '..'"}},
		{"key", "", []string{"a valid config key"}},
	} {
		got := rules[c.rule](c.in)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s %q: problems %q, want ones beginning %q", c.rule, c.in, got, c.want)
		}
	}
}

// TestConfigMapKeepsBytes checks that the experiment file goes through YAML unchanged whatever
// it holds: trailing spaces, tabs, no final line break, a document marker, non-ASCII text.
func TestConfigMapKeepsBytes(t *testing.T) {
	for _, src := range []string{
		"version: 1\nname: x\n",
		"version: 1   \n\tname: x",
		"---\nversion: 1\n...\n# é ü 日本\n\n\n",
		"a: \"quoted: yes\"\nb: |\n  literal\n---\n",
	} {
		k := Kubernetes{Experiment: Experiment{Path: "x.yaml", Name: "x", Source: []byte(src), Servers: 1}, Shards: 2, Image: "runner:1"}
		var out bytes.Buffer
		if err := k.Write(&out); err != nil {
			t.Fatal(err)
		}
		docs := bytes.Split(out.Bytes(), []byte("\n---\n"))
		var cm configMap
		if err := yaml.UnmarshalStrict(docs[len(docs)-1], &cm); err != nil {
			t.Fatalf("the ConfigMap does not read back: %v", err)
		}
		if cm.Kind != "ConfigMap" || !slices.Equal(slices.Collect(maps.Keys(cm.Data)), []string{"x.yaml"}) {
			t.Fatalf("the last document is not the ConfigMap of x.yaml: %+v", cm)
		}
		if got := cm.Data["x.yaml"]; got != src {
			t.Errorf("ConfigMap holds %q, want %q", got, src)
		}
	}
}
