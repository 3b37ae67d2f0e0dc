package k8scheck

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/sched"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nameRules pairs each name rule of package sched with the official validation function it
// stands for, the one the export checked with before.
var nameRules = []struct {
	name           string
	ours, official func(string) []string
}{
	{"qualified name", sched.QualifiedNameProblems, validation.IsQualifiedName},
	{"label value", sched.LabelValueProblems, validation.IsValidLabelValue},
	{"DNS-1123 subdomain", sched.DNSSubdomainProblems, validation.IsDNS1123Subdomain},
	{"DNS-1123 label", sched.DNSLabelProblems, validation.IsDNS1123Label},
	{"ConfigMap key", sched.ConfigMapKeyProblems, validation.IsConfigMapKey},
}

// nameInputs are names around every edge of the rules: lengths at and past their limits,
// uppercase, dots, underscores, slashes and prefixes, empty parts, spaces, control characters,
// non-ASCII text and bytes that are not UTF-8.
func nameInputs() []string {
	r := strings.Repeat
	label := validation.DNS1123LabelMaxLength
	sub := validation.DNS1123SubdomainMaxLength
	in := []string{
		"", "a", "A", "0", "-", ".", "..", "_", "/", "//", "a/", "/a", "a/b/c", "a//b",
		"my-name", "123-abc", "My-Name", "-a", "a-", "a--b", "a_b", "_a", "a_", "a.b", "a..b", ".a", "a.",
		"..a", "...", ".a.", "a.b.c", "A.b", "a.B", "example.com", "Example.com", "example.com.",
		"nvidia.com/gpu", "amd.com/gpu", "nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
		"example.com/MyName", "Example.com/x", "-example.com/x", "example_com/x", ".com/x", "example.com/",
		"example.com/-x", "example.com/x_", "example.com/a.b_c-D", "kubernetes.io/x", "a b", " a", "a ",
		"a\tb", "a\nb", "a\n", "a\x00", "a\x7f", "é", "aé", "日本", "a日b", "\xff", "a\xffb", "\u00e9.com/x",
		"Tesla-T4", "Tesla T4", "my_value", "MyValue", "12345", "key.name", "KEY_NAME", "key-name",
		"x.yaml", "prefill-sweep.yaml", "a b.yaml", "a/b.yaml", "..yaml", ".yaml", "a..yaml",
		"runner-prefill-sweep-experiment", "results.team-a",
		r("a", label-1), r("a", label), r("a", label+1), r("A", label), r("a", label) + ".b",
		r("a", label) + "/x", "x/" + r("a", label), "x/" + r("a", label+1),
		r("a", sub-1), r("a", sub), r("a", sub+1), r("a.", sub/2) + "a", r("a.", sub/2+1) + "a",
		r("a", sub) + "/x", r("a", sub+1) + "/x", r("a", sub) + "/" + r("b", label+1),
		r(r("b", label)+".", 3) + r("c", sub-3*(label+1)), r(r("b", label)+".", 3) + r("c", sub-3*(label+1)+1),
		r(r("b", label+1)+".", 2) + "c", r("é", label/2), r("é", label/2+1), r("-", label+1), r("_", sub+1),
	}
	return in
}

// compareRule reports where a rule of ours and the official function disagree on s: on its
// verdict or, when both refuse it, on any word of the problems they give.
func compareRule(t *testing.T, rule string, ours, official func(string) []string, s string) {
	t.Helper()
	got, want := ours(s), official(s)
	if (len(got) == 0) != (len(want) == 0) {
		t.Errorf("%s %q: ours says %q, the official validation %q", rule, s, got, want)
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s %q: problems differ:\nours:     %q\nofficial: %q", rule, s, got, want)
	}
}

func TestNameRulesMatchOfficial(t *testing.T) {
	valid := map[string]int{}
	for _, s := range nameInputs() {
		for _, rule := range nameRules {
			compareRule(t, rule.name, rule.ours, rule.official, s)
			if len(rule.official(s)) == 0 {
				valid[rule.name]++
			}
		}
	}
	// The table must hold both verdicts of every rule, or it proves half of it.
	for _, rule := range nameRules {
		if n := valid[rule.name]; n < 5 || n > len(nameInputs())-5 {
			t.Errorf("%s: %d of %d inputs valid: the table does not test both verdicts", rule.name, n, len(nameInputs()))
		}
	}
}

// TestNameRulesMatchOfficialOnRandomNames compares the rules on names drawn from the characters
// that matter to them, with a fixed seed so that a failure repeats.
func TestNameRulesMatchOfficialOnRandomNames(t *testing.T) {
	const alphabet = "ab0Z-._/ é\n"
	chars := []rune(alphabet)
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for range 20000 {
		b.Reset()
		n := rng.IntN(12)
		if rng.IntN(20) == 0 {
			n = 55 + rng.IntN(270)
		}
		for range n {
			// Mostly the characters of a valid name, so that many names are valid.
			if rng.IntN(4) == 0 {
				b.WriteRune(chars[rng.IntN(len(chars))])
			} else {
				b.WriteRune(chars[rng.IntN(4)])
			}
		}
		s := b.String()
		for _, rule := range nameRules {
			compareRule(t, rule.name, rule.ours, rule.official, s)
		}
	}
}

// FuzzNameRules compares the rules on any input; go test runs it on the table's names, and
// go test -fuzz FuzzNameRules searches further.
func FuzzNameRules(f *testing.F) {
	for _, s := range nameInputs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, rule := range nameRules {
			compareRule(t, rule.name, rule.ours, rule.official, s)
		}
	})
}
