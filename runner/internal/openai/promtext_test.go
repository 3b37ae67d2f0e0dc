package openai

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// textCases are inputs of the text format, each with one construct or one malformation.
// testdata/metrics/parse.golden holds what ParseMetrics makes of each.
var textCases = []struct{ name, in string }{
	// Samples, names and values.
	{"empty", ""},
	{"blanks without newline", " \t "},
	{"blank lines", "\n\n  \n\t\na 1\n\n"},
	{"untyped", "a 1\n"},
	{"leading blanks", "  \ta 1\n"},
	{"tabs between fields", "a\t1\t1712345678000\n"},
	{"colon names", "vllm:num_requests_running{model_name=\"m\"} 3\n:x 1\n_y:z_9 2\n"},
	{"values", "a{v=\"1\"} NaN\na{v=\"2\"} +Inf\na{v=\"3\"} -Inf\na{v=\"4\"} Inf\na{v=\"5\"} nan\na{v=\"6\"} 1e3\na{v=\"7\"} -0\na{v=\"8\"} .5\na{v=\"9\"} +2.5E-3\na{v=\"10\"} 1e-400\na{v=\"11\"} infinity\n"},
	{"timestamps", "a{t=\"1\"} 1 1712345678000\na{t=\"2\"} 2 -5\na{t=\"3\"} 3 +7\n"},
	{"value right after the name", "a-1\nb.5 1\nc+Inf\n"},
	{"duplicate samples keep their order", "a 2\na 1\nb{x=\"1\"} 3\nb{x=\"1\"} 1\n"},
	{"samples sorted by name and labels", "b 1\na{z=\"1\"} 2\na{c=\"1\"} 3\na 4\n"},
	{"quoted metric name", "\"abc\" 1\n\"q\"{a=\"b\"} 2\n"},
	{"quoted segment after a bare name", "ab\"cd\" 1\n"},
	// Labels.
	{"empty label set", "a{} 1\n"},
	{"trailing comma", "a{b=\"x\",} 1\n"},
	{"blanks inside the label set", "a { b = \"x\" ,\tc=\"y\" , } 1\n"},
	{"value right after the label set", "a{b=\"x\"}1\n"},
	{"label escapes", "a{b=\"q\\\"uo\\\\te\\nx\"} 1\n"},
	{"label value with braces and commas", "a{b=\"} , {\"} 1\n"},
	{"label value with a NUL", "a{b=\"x\x00y\"} 1\n"},
	{"label value with UTF-8", "a{b=\"Grüße ☃\"} 1\n"},
	{"quoted label name", "a{\"b\"=\"x\"} 1\n"},
	{"labels sorted by name", "a{z=\"1\",b=\"2\",m=\"3\"} 1\n"},
	{"brace name after labels", "{a=\"b\", \"n\"} 1\n"},
	{"brace name after an le label", "# TYPE h histogram\na 1\n{le=\"1\", \"h_bucket\"} 1\n"},
	{"brace name", "{\"vllm:x\", a=\"b\"} 1\n{y} 2\n{\"z\",} 3\n"},
	// Comments.
	{"comments", "# just a comment\n#\n#nospace\n#  \n# HELP\n# TYPE\n# HELP a\n# TYPE a\na 1\n"},
	{"comment after blanks", "  # HELP a x\n\t# TYPE a gauge\n \t{\"a\"} 1\n"},
	{"help and type", "# HELP a Some help, with \\\\ and \\n and \\\".\n# TYPE a counter\na 1\n"},
	{"help without a blank after the hash", "#HELP a text\n#TYPE a gauge\na 1\n"},
	{"help with a quoted name", "# HELP \"vllm:x\" text\n# TYPE \"vllm:x\" gauge\nvllm:x 1\n"},
	{"help and type after an empty name", "# HELP \"\"\n# TYPE \"a.b\"\na 1\n"},
	{"type case", "# TYPE a Counter\n# TYPE b GAUGE\n# TYPE c UnTyped\na 1\nb 2\nc 3\n"},
	{"type with a backslash", "# TYPE a coun\\ter\na 1\n"},
	{"help then type then samples", "# HELP h Latency.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"},
	// Histograms.
	{"histogram", "# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 4\nh_bucket{le=\"1\"} 3\nh_sum 2.5\nh_count 4\n"},
	{"histogram series", "# TYPE h histogram\nh_sum{e=\"1\",m=\"x\"} 1\nh_bucket{m=\"x\",le=\"1\",e=\"1\"} 2\nh_count{e=\"1\",m=\"x\"} 2\nh_bucket{e=\"0\",le=\"1\",m=\"x\"} 5\nh_count{e=\"0\",m=\"x\"} 5\n"},
	{"histogram without sum or count", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"2\"} 2\n"},
	{"histogram infinity spellings", "# TYPE h histogram\nh_bucket{le=\"Inf\"} 3\nh_bucket{le=\"-inf\"} 0\nh_bucket{le=\"1e1\"} 2\n"},
	{"histogram NaN le", "# TYPE h histogram\nh_bucket{le=\"NaN\"} 3\nh_count 3\n"},
	{"histogram sample without le", "# TYPE h histogram\nh_bucket{a=\"1\"} 3\nh{a=\"2\"} 4\n"},
	{"histogram le on the bare name", "# TYPE h histogram\nh{le=\"1\"} 4\n"},
	{"histogram le on count and sum", "# TYPE h histogram\nh_count{le=\"7\"} 4\nh_sum{le=\"8\"} 1\n"},
	{"histogram fractional counts", "# TYPE h histogram\nh_bucket{le=\"1\"} 1.5\nh_count 2.5\n"},
	{"histogram fractional bucket without count", "# TYPE h histogram\nh_bucket{le=\"1\"} 1.5\nh_sum 2\n"},
	{"histogram integer and fractional counts", "# TYPE h histogram\nh_count 1.5\nh_count 2\n"},
	{"histogram NaN and infinite counts", "# TYPE h histogram\nh_bucket{le=\"1\"} NaN\nh_bucket{le=\"2\"} +Inf\nh_count NaN\n"},
	{"histogram negative zero count", "# TYPE h histogram\nh_bucket{le=\"1\"} -0\nh_count -0\nh_sum -0\n"},
	{"histogram duplicate bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1\"} 2\n"},
	{"histogram duplicate sum and count", "# TYPE h histogram\nh_sum 1\nh_sum 2\nh_count 3\nh_count 4\n"},
	{"gauge histogram", "# TYPE g gauge_histogram\ng_bucket{le=\"1\"} 1\ng_count 1\n# TYPE k gaugehistogram\nk_bucket{le=\"1\"} 2\n"},
	{"histogram quantile label is kept", "# TYPE h histogram\nh_bucket{le=\"1\",quantile=\"0.5\"} 1\n"},
	{"histogram brace name", "# TYPE h histogram\n{\"h_bucket\",le=\"1\"} 1\n{h_count} 1\n"},
	{"histogram other suffix is its own family", "# TYPE h histogram\nh_total 1\nh_bucket{le=\"1\"} 1\n"},
	{"histogram suffix families made first", "# HELP h_count Count.\n# TYPE h histogram\nh_count 5\nh_bucket{le=\"1\"} 1\n"},
	{"help of a histogram by its suffix", "# TYPE h histogram\n# HELP h_bucket Buckets.\nh_bucket{le=\"1\"} 1\n"},
	{"untyped histogram", "h_bucket{le=\"1\",a=\"x\"} 1\nh_bucket{a=\"x\",le=\"+Inf\"} 2\nh_sum{a=\"x\"} 3\nh_count{a=\"x\"} 2\nh_other 9\n"},
	{"untyped histogram without le", "h_bucket{a=\"x\"} 1\nh_sum 3\n"},
	{"untyped bucket named only _bucket", "_bucket{le=\"0\"} 0\n"},
	{"untyped and typed halves of one histogram", "h_bucket{le=\"1\"} 1\n# TYPE h histogram\nh_bucket{le=\"2\"} 2\nh_sum 4\n"},
	// Summaries.
	{"summary", "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.90\"} 2\ns{quantile=\"1e-2\"} 3\ns_sum 10\ns_count 4\n"},
	{"summary series", "# TYPE s summary\ns{a=\"2\",quantile=\"0.5\"} 1\ns{quantile=\"0.5\",a=\"1\"} 2\ns_count{a=\"1\"} 3\n"},
	{"summary fractional count", "# TYPE s summary\ns_count 3.7\ns_sum 1.5\n"},
	{"summary NaN quantile", "# TYPE s summary\ns{quantile=\"NaN\"} 1\ns_count 1\n"},
	{"summary sample without quantile", "# TYPE s summary\ns{a=\"1\"} 1\n"},
	{"summary duplicate quantile", "# TYPE s summary\ns{quantile=\"0.5\"} 2\ns{quantile=\"0.5\"} 1\n"},
	{"summary le label is kept", "# TYPE s summary\ns{quantile=\"0.5\",le=\"1\"} 1\n"},
	{"summary suffix family made first", "s_sum 1\n# TYPE s summary\ns_sum 2\ns{quantile=\"0.5\"} 3\n"},
	{"summary bucket is its own family", "# TYPE s summary\ns_bucket{le=\"1\"} 1\n"},
	// Errors.
	{"no final newline", "a 1"},
	{"no final newline on line 2", "a 1\nb 2"},
	{"no final newline after a comment", "a 1\n# c"},
	{"no final newline after a hash", "#"},
	{"no final newline after help", "# HELP a"},
	{"unterminated label value", "a{b=\"x} 1\n"},
	{"newline in a label value", "a 1\na{b=\"x\ny\"} 1\n"},
	{"bad escape in a label value", "a{b=\"\\t\"} 1\n"},
	{"unquoted label value", "a{b=x} 1\n"},
	{"label without a value", "a{b} 1\n"},
	{"label name with a digit first", "a{1b=\"x\"} 1\n"},
	{"label name with a colon", "a{b:c=\"x\"} 1\n"},
	{"reserved label name", "a{__name__=\"x\"} 1\n"},
	{"quoted label name that is not legacy", "a{\"b.c\"=\"x\"} 1\n"},
	{"empty quoted label name", "a{\"\"=\"x\"} 1\n"},
	{"duplicate label", "a{b=\"1\",b=\"2\"} 1\n"},
	{"missing comma", "a{b=\"1\" c=\"2\"} 1\n"},
	{"leading comma", "a{,b=\"1\"} 1\n"},
	{"unterminated label set", "a{b=\"1\"\n"},
	{"invalid UTF-8 in a label value", "a{b=\"\xff\"} 1\n"},
	{"word as value", "a one\n"},
	{"too many fields", "a 1 2 3\n"},
	{"word as timestamp", "a 1 soon\n"},
	{"fractional timestamp", "a 1 1.5\n"},
	{"blank after the value", "a 1 \n"},
	{"blank after the timestamp", "a 1 5 \n"},
	{"value out of range", "a 1e400\n"},
	{"hex float value", "a 0x1p3\n"},
	{"value with an underscore", "a 1_000\n"},
	{"no value", "a\n"},
	{"no value after labels", "a{b=\"x\"}\n"},
	{"carriage return", "a 1\r\n"},
	{"byte order mark", "\xef\xbb\xbfa 1\n"},
	{"name with a digit first", "1a 1\n"},
	{"name with a dot", "a.b{c=\"d\"} 1\n"},
	{"quoted name that is not legacy", "\"a.b\" 1\n"},
	{"empty quoted name", "\"\" 1\n"},
	{"unterminated quoted name", "\"abc 1\n"},
	{"brace without a name", "{} 1\n"},
	{"brace with only labels", "{a=\"b\"} 1\n"},
	{"brace with two names", "{\"a\", \"b\"} 1\n"},
	{"brace name with a colon", "{a:b} 1\n"},
	{"second TYPE", "# TYPE a gauge\n# TYPE a counter\n"},
	{"second HELP", "# HELP a x\n# HELP a y\n"},
	{"TYPE after samples", "a{b=\"1\"} 1\n# TYPE a counter\n"},
	{"unknown type", "# TYPE a info\n"},
	{"type with a trailing blank", "# TYPE a gauge \n"},
	{"invalid name in a comment", "# TYPE a.b gauge\n"},
	{"empty quoted name in a comment", "# HELP \"\" x\n"},
	{"bad escape in help", "# HELP a bad\\q\n"},
	{"backslash ending help", "# HELP a end\\\n"},
	{"type of a histogram suffix", "# TYPE h histogram\n# TYPE h_count counter\n"},
	{"bad le", "# TYPE h histogram\nh_bucket{le=\"big\"} 1\n"},
	{"bad le on count", "# TYPE h histogram\nh_count{le=\"\"} 1\n"},
	{"negative count", "# TYPE h histogram\nh_count -1\n"},
	{"negative fractional count", "# TYPE h histogram\nh_count -0.5\n"},
	{"negative bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} -2\n"},
	{"negative infinite bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} -Inf\n"},
	{"bad quantile", "# TYPE s summary\ns{quantile=\"x\"} 1\n"},
	{"untyped bad le", "a 1\nh_bucket{le=\"big\"} 1\n"},
	{"untyped NaN le", "h_bucket{le=\"NaN\"} 1\n"},
	{"html", "<html><body>502 Bad Gateway</body></html>\n"},
	{"shell prompt", "a 1\n$ curl http://x/metrics\n"},
	{"dots", "# TYPE a gauge\n\n...\n"},
}

// renderParse writes what ParseMetrics makes of in, every float exactly; of an error only the
// line it names.
func renderParse(in string) string {
	m, err := ParseMetrics(strings.NewReader(in))
	if err != nil {
		if l := errLine.FindStringSubmatch(err.Error()); l != nil {
			return "error in line " + l[1] + "\n"
		}
		return "error\n"
	}
	var b strings.Builder
	for _, h := range m.Histograms {
		fmt.Fprintf(&b, "histogram %s%s", h.Name, renderLabels(h.Labels))
		if h.HasSum {
			fmt.Fprintf(&b, " sum=%s", renderFloat(h.Sum))
		}
		if h.HasCount {
			fmt.Fprintf(&b, " count=%s", renderFloat(h.Count))
		}
		b.WriteString(" buckets:")
		for _, x := range h.Buckets {
			fmt.Fprintf(&b, " %s:%s", renderFloat(x.UpperBound), renderFloat(x.Count))
		}
		b.WriteString("\n")
	}
	for _, s := range m.Samples {
		fmt.Fprintf(&b, "sample %s%s %s\n", s.Name, renderLabels(s.Labels), renderFloat(s.Value))
	}
	return b.String()
}

var errLine = regexp.MustCompile(`line (\d+)`)

func renderLabels(ls []Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "=" + strconv.Quote(l.Value)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func renderFloat(v float64) string {
	if v == 0 && math.Signbit(v) {
		return "-0"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// TestParseMetricsGolden compares what ParseMetrics makes of every case and every /metrics
// fixture with testdata/metrics/parse.golden.
func TestParseMetricsGolden(t *testing.T) {
	type result struct{ name, got string }
	var results []result
	seen := map[string]bool{}
	for _, c := range textCases {
		if seen[c.name] || strings.Contains(c.name, "--") {
			t.Fatalf("case name %q is used twice or holds --", c.name)
		}
		seen[c.name] = true
		results = append(results, result{c.name, renderParse(c.in)})
	}
	fixtures, err := filepath.Glob(filepath.Join("testdata", "metrics", "*.prom"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("fixtures: %v %v", fixtures, err)
	}
	for _, path := range fixtures {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, result{"fixture " + filepath.Base(path), renderParse(string(b))})
	}

	golden := filepath.Join("testdata", "metrics", "parse.golden")
	if *update {
		var b strings.Builder
		for _, r := range results {
			fmt.Fprintf(&b, "-- %s --\n%s", r.name, r.got)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := readGolden(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		w, ok := want[r.name]
		if !ok {
			t.Errorf("%s: not in %s (run with -update to add it)", r.name, golden)
			continue
		}
		if r.got != w {
			t.Errorf("%s:\n got:\n%s want:\n%s", r.name, r.got, w)
		}
		delete(want, r.name)
	}
	for name := range want {
		t.Errorf("%s: in %s but no longer a case", name, golden)
	}
}

// readGolden splits a golden file into its "-- name --" sections.
func readGolden(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name != "" {
			out[name] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if h, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(h, " --\n") {
			flush()
			name = strings.TrimSuffix(h, " --\n")
			continue
		}
		body.WriteString(line)
	}
	flush()
	return out, nil
}
