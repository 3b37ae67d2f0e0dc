package openai

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file reads the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/). What it accepts and what it
// rejects follow the Prometheus project's reference parser (prometheus/common/expfmt, with
// legacy name validation), so that a page one accepts the other accepts too;
// testdata/metrics/parse.golden holds that parser's results on a case of every construct and
// malformation, and the few places where this one differs on purpose.

// famType is the type of a metric family: what its TYPE line says, or untyped once a sample
// came before any TYPE line.
type famType uint8

const (
	famUnset famType = iota
	famUntyped
	famCounter
	famGauge
	famSummary
	famHistogram // also a gauge histogram, which the text format reads as a histogram
)

// famTypes maps the upper-cased word of a TYPE line to its type.
var famTypes = map[string]famType{
	"COUNTER": famCounter, "GAUGE": famGauge, "UNTYPED": famUntyped, "SUMMARY": famSummary,
	"HISTOGRAM": famHistogram, "GAUGE_HISTOGRAM": famHistogram, "GAUGEHISTOGRAM": famHistogram,
}

// family is one metric family: a name, and the HELP and TYPE lines seen for it.
type family struct {
	name    string
	typ     famType
	hasHelp bool
}

// part is the sample of a summary or histogram series that a line holds when its name is the
// family's with a suffix: the _sum, the _count, or neither (a bucket or a quantile).
type part uint8

const (
	partOther part = iota
	partSum
	partCount
)

// summarySeries gathers the lines of one summary series until the end of the input, when it
// becomes plain samples.
type summarySeries struct {
	name             string
	labels           []Label
	sum, count       float64
	hasSum, hasCount bool
	sumLine          int
	countLine        int
	quantiles        []Sample
	quantileLines    []int
}

// textParser holds the state of one parse.
type textParser struct {
	families   map[string]*family
	histograms map[string]*Histogram // by seriesGroup
	summaries  map[string]*summarySeries
	summaryOf  []*summarySeries // in the order of their first line
	m          *Metrics
	// sampleLines holds the input line of each of m.Samples, for the errors of foldUntyped.
	sampleLines []int
	line        int // the line being read, from 1
}

// parseText parses a whole page. It returns the samples and histograms in the order of their
// first line, unsorted and before foldUntyped, with the line of each sample.
func parseText(data string) (*Metrics, []int, error) {
	p := &textParser{
		families:   map[string]*family{},
		histograms: map[string]*Histogram{},
		summaries:  map[string]*summarySeries{},
		m:          &Metrics{},
	}
	for data != "" {
		p.line++
		line, rest, terminated := strings.Cut(data, "\n")
		data = rest
		if err := p.parseLine(line); err != nil {
			return nil, nil, err
		}
		// The reference parser wants every line ended, the last one too, unless it is blank.
		if !terminated && trimBlanks(line) != "" {
			return nil, nil, p.errorf("unexpected end of input stream")
		}
	}
	for _, s := range p.summaryOf {
		if s.hasSum {
			p.m.Samples = append(p.m.Samples, Sample{s.name + "_sum", s.labels, s.sum})
			p.sampleLines = append(p.sampleLines, s.sumLine)
		}
		if s.hasCount {
			p.m.Samples = append(p.m.Samples, Sample{s.name + "_count", s.labels, s.count})
			p.sampleLines = append(p.sampleLines, s.countLine)
		}
		p.m.Samples = append(p.m.Samples, s.quantiles...)
		p.sampleLines = append(p.sampleLines, s.quantileLines...)
	}
	return p.m, p.sampleLines, nil
}

// errorf returns an error at the current line.
func (p *textParser) errorf(format string, args ...any) error {
	return fmt.Errorf("metrics: text format parsing error in line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// parseLine reads one line, without its newline.
func (p *textParser) parseLine(s string) error {
	s = trimBlanks(s)
	switch {
	case s == "":
		return nil
	case s[0] == '#':
		return p.comment(s[1:])
	}
	return p.sample(s)
}

// comment reads what follows a '#': a HELP or TYPE line, or any other comment, which is
// ignored.
func (p *textParser) comment(s string) error {
	keyword, rest, ok := cutBlank(trimBlanks(s))
	if !ok || keyword != "HELP" && keyword != "TYPE" {
		return nil // a bare keyword or another comment
	}
	name, rest, err := p.readName(trimBlanks(rest), true)
	if err != nil {
		return err
	}
	if rest == "" {
		return nil // a name and nothing to say of it
	}
	if !isBlank(rest[0]) {
		return p.errorf("invalid metric name in comment")
	}
	f, _, err := p.family(name)
	if err != nil {
		return err
	}
	text := trimBlanks(rest)
	if text == "" {
		return nil
	}
	if keyword == "HELP" {
		if f.hasHelp {
			return p.errorf("second HELP line for metric name %q", f.name)
		}
		if err := p.checkEscapes(text); err != nil {
			return err
		}
		f.hasHelp = true
		return nil
	}
	if f.typ != famUnset {
		return p.errorf("second TYPE line for metric name %q, or TYPE reported after samples", f.name)
	}
	// The reference parser drops backslashes from the type word and ignores its case.
	typ, ok := famTypes[strings.ToUpper(strings.ReplaceAll(text, `\`, ""))]
	if !ok {
		return p.errorf("unknown metric type %q", text)
	}
	f.typ = typ
	return nil
}

// sample reads a sample line: a name, optional labels in braces, a value and an optional
// timestamp. A line may also start with the braces and name the metric inside them, quoted
// or not: {"name", label="value"}.
func (p *textParser) sample(s string) error {
	name, labels, s, err := p.sampleName(s)
	if err != nil {
		return err
	}
	// The value follows the name or the braces, blanks between them or not.
	value, s := cutToken(trimBlanks(s))
	timestamp, hasTimestamp := "", s != ""
	if hasTimestamp {
		timestamp, s = cutToken(trimBlanks(s))
	}

	f, pt, err := p.family(name)
	if err != nil {
		return err
	}
	if f.typ == famUnset {
		f.typ = famUntyped
	}
	kept, le, quantile, err := p.seriesLabels(f, labels)
	if err != nil {
		return err
	}
	v, err := parseValue(value)
	if err != nil {
		return p.errorf("expected float as value, got %q", value)
	}
	if hasTimestamp {
		// The timestamp must be an integer (milliseconds); ParseMetrics has no use for it.
		if _, err := strconv.ParseInt(timestamp, 10, 64); err != nil {
			return p.errorf("expected integer as timestamp, got %q", timestamp)
		}
		if s != "" {
			return p.errorf("spurious string after timestamp: %q", s)
		}
	}

	switch f.typ {
	case famSummary:
		p.summarySample(f.name, kept, pt, quantile, v)
	case famHistogram:
		return p.histogramSample(f.name, kept, pt, le, v)
	default:
		p.m.Samples = append(p.m.Samples, Sample{f.name, kept, v})
		p.sampleLines = append(p.sampleLines, p.line)
	}
	return nil
}

// sampleName reads the start of a sample line, the metric name and its labels, written either
// as name{labels} or with the name inside the braces, and returns what follows.
func (p *textParser) sampleName(s string) (name string, labels []Label, rest string, err error) {
	if s[0] == '{' {
		return p.readLabels(s[1:], true)
	}
	if name, s, err = p.readName(s, true); err != nil {
		return "", nil, "", err
	}
	if name == "" {
		return "", nil, "", p.errorf("invalid metric name")
	}
	if s = trimBlanks(s); s != "" && s[0] == '{' {
		if _, labels, s, err = p.readLabels(s[1:], false); err != nil {
			return "", nil, "", err
		}
	}
	return name, labels, s, nil
}

// seriesLabels checks the labels of a sample line of family f and returns those of its series,
// sorted, apart from the le of a histogram's bucket and the quantile of a summary's quantile
// (NaN when the line has none), which say which sample of the series the line is.
func (p *textParser) seriesLabels(f *family, labels []Label) (kept []Label, le, quantile float64, err error) {
	le, quantile = math.NaN(), math.NaN()
	kept = make([]Label, 0, len(labels))
	for _, l := range labels {
		if l.Name == "__name__" {
			return nil, 0, 0, p.errorf("label name %q is reserved", l.Name)
		}
		if !isLegacyName(l.Name, false) {
			return nil, 0, 0, p.errorf("invalid label name %q", l.Name)
		}
		if !utf8.ValidString(l.Value) {
			return nil, 0, 0, p.errorf("invalid label value %q", l.Value)
		}
		// A summary's quantile and a histogram's le say which sample of the series the line
		// is; they are not labels of the series.
		switch {
		case f.typ == famSummary && l.Name == "quantile":
			if quantile, err = parseValue(l.Value); err != nil {
				return nil, 0, 0, p.errorf("expected float as value for 'quantile' label, got %q", l.Value)
			}
			continue
		case f.typ == famHistogram && l.Name == "le":
			if le, err = parseValue(l.Value); err != nil {
				return nil, 0, 0, p.errorf("expected float as value for 'le' label, got %q", l.Value)
			}
			continue
		}
		kept = append(kept, l)
	}
	kept = sortedLabels(kept)
	for i := 1; i < len(kept); i++ {
		if kept[i].Name == kept[i-1].Name {
			return nil, 0, 0, p.errorf("duplicate label names for metric %q", f.name)
		}
	}
	return kept, le, quantile, nil
}

// summarySample adds a sample line of the summary name to its series: the sum, the count, or
// the quantile its quantile label says; a line that is none of these only makes the series.
func (p *textParser) summarySample(name string, kept []Label, pt part, quantile, v float64) {
	key := seriesGroup(name, kept)
	ss := p.summaries[key]
	if ss == nil {
		ss = &summarySeries{name: name, labels: kept}
		p.summaries[key] = ss
		p.summaryOf = append(p.summaryOf, ss)
	}
	switch pt {
	case partSum:
		ss.sum, ss.hasSum, ss.sumLine = v, true, p.line
	case partCount:
		// The reference parser keeps a summary's count as an unsigned integer.
		ss.count, ss.hasCount, ss.countLine = positiveZero(math.Trunc(v)), true, p.line
	default:
		if !math.IsNaN(quantile) {
			ql := sortedLabels(append(kept[:len(kept):len(kept)], Label{"quantile", strconv.FormatFloat(quantile, 'g', -1, 64)}))
			ss.quantiles = append(ss.quantiles, Sample{name, ql, v})
			ss.quantileLines = append(ss.quantileLines, p.line)
		}
	}
}

// histogramSample adds a sample line of the histogram name to its series: the sum, the count,
// or the bucket its le label says; a line that is none of these only makes the series. A
// negative count or bucket population is an error.
func (p *textParser) histogramSample(name string, kept []Label, pt part, le, v float64) error {
	key := seriesGroup(name, kept)
	h := p.histograms[key]
	if h == nil {
		h = &Histogram{Name: name, Labels: kept}
		p.histograms[key] = h
		p.m.Histograms = append(p.m.Histograms, h)
	}
	switch pt {
	case partSum:
		h.Sum, h.HasSum = v, true
	case partCount:
		if v < 0 {
			return p.errorf("negative count for histogram %q", name)
		}
		h.Count, h.HasCount = positiveZero(v), true
	default:
		if !math.IsNaN(le) {
			if v < 0 {
				return p.errorf("negative bucket population for histogram %q", name)
			}
			h.Buckets = append(h.Buckets, Bucket{le, positiveZero(v)})
		}
	}
	return nil
}

// readLabels reads a label set after its '{' up to and including its '}', and returns what
// follows. With braceName (the line started with the brace) one item of the set is the metric
// name, a label name without '=' and a value; otherwise there is none.
func (p *textParser) readLabels(s string, braceName bool) (name string, labels []Label, rest string, err error) {
	for {
		s = trimBlanks(s)
		if s == "" {
			return "", nil, "", p.errorf("unexpected end of label set")
		}
		if s[0] == '}' {
			if braceName && name == "" {
				return "", nil, "", p.errorf("invalid metric name")
			}
			return name, labels, s[1:], nil
		}
		var token string
		if token, s, err = p.readName(s, false); err != nil {
			return "", nil, "", err
		}
		if token == "" {
			return "", nil, "", p.errorf("invalid label name")
		}
		s = trimBlanks(s)
		if s == "" || s[0] != '=' {
			// Not a label: the metric name, if the braces may hold it.
			switch {
			case !braceName:
				return "", nil, "", p.errorf("expected '=' after label name %q", token)
			case name != "":
				return "", nil, "", p.errorf("multiple metric names %q and %q", name, token)
			case s == "" || s[0] != ',' && s[0] != '}':
				return "", nil, "", p.errorf("unexpected end of metric name %q", token)
			}
			name = token
			if s[0] == ',' {
				s = s[1:]
			}
			continue
		}
		s = trimBlanks(s[1:])
		if s == "" || s[0] != '"' {
			return "", nil, "", p.errorf("expected '\"' at start of label value of %q", token)
		}
		var value string
		if value, s, err = p.readQuoted(s[1:]); err != nil {
			return "", nil, "", err
		}
		labels = append(labels, Label{token, value})
		s = trimBlanks(s)
		switch {
		case s != "" && s[0] == ',':
			s = s[1:]
		case s != "" && s[0] == '}':
			// The next turn of the loop ends the set.
		default:
			return "", nil, "", p.errorf("unexpected end of label value %q", value)
		}
	}
}

// readName reads a metric name (metric) or a label name at the start of s: a run of the
// characters such a name may hold, then optionally one quoted part, which the reference
// parser joins to the run. It returns "" when s starts with neither. Whether the name is
// valid is for the caller to check.
func (p *textParser) readName(s string, metric bool) (name, rest string, err error) {
	n := 0
	for n < len(s) && isNameByte(s[n], n == 0, metric) {
		n++
	}
	name, s = s[:n], s[n:]
	if s != "" && s[0] == '"' {
		var quoted string
		if quoted, s, err = p.readQuoted(s[1:]); err != nil {
			return "", "", err
		}
		name += quoted
	}
	return name, s, nil
}

// readQuoted reads a quoted string after its opening quote up to and including the closing
// one, undoing the escapes \\, \" and \n, and returns what follows.
func (p *textParser) readQuoted(s string) (value, rest string, err error) {
	end := strings.IndexAny(s, `"\`)
	if end >= 0 && s[end] == '"' {
		return s[:end], s[end+1:], nil // no escapes
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i++; i == len(s) {
				return "", "", p.errorf("quoted string ends in a backslash")
			}
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", "", p.errorf("invalid escape sequence '\\%c'", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", p.errorf("quoted string %q has no closing quote", b.String())
}

// checkEscapes checks the escapes of a HELP text: \\, \" and \n are the only ones.
func (p *textParser) checkEscapes(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i++; i == len(s) {
			return p.errorf("HELP text ends in a backslash")
		}
		if c := s[i]; c != '\\' && c != '"' && c != 'n' {
			return p.errorf("invalid escape sequence '\\%c'", c)
		}
	}
	return nil
}

// family returns the family a sample or comment name belongs to, made if new, and the part
// of a summary or histogram series the name stands for. As in the reference parser, a family
// of exactly the name comes first; name_sum and name_count belong to a summary or histogram
// "name", and name_bucket to a histogram "name", only when no family of the full name exists.
func (p *textParser) family(name string) (*family, part, error) {
	if !isLegacyName(name, true) {
		return nil, partOther, p.errorf("invalid metric name %q", name)
	}
	if f := p.families[name]; f != nil {
		return f, partOther, nil
	}
	for _, suffix := range []struct {
		s    string
		part part
	}{{"_sum", partSum}, {"_count", partCount}, {"_bucket", partOther}} {
		base, ok := strings.CutSuffix(name, suffix.s)
		if !ok || base == "" {
			continue
		}
		f := p.families[base]
		if f != nil && (f.typ == famHistogram || f.typ == famSummary && suffix.part != partOther) {
			return f, suffix.part, nil
		}
	}
	f := &family{name: name}
	p.families[name] = f
	return f, partOther, nil
}

// seriesGroup identifies a series by its family and sorted labels. The separator 0xff cannot
// be in a valid name or a valid UTF-8 value, so two different series never share a key.
func seriesGroup(name string, ls []Label) string { return joinSeries(name, ls, 0xff) }

// parseValue parses a sample value or an le or quantile label: a Go float, Inf and NaN in
// any case and spelling strconv knows, but neither hexadecimal floats nor digit separators.
func parseValue(s string) (float64, error) {
	if strings.ContainsAny(s, "pP_") {
		return 0, fmt.Errorf("unsupported character in float %q", s)
	}
	return strconv.ParseFloat(s, 64)
}

// positiveZero turns -0 into 0: the reference parser stores counts as unsigned integers when
// they are whole, and those have no negative zero.
func positiveZero(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

// isNameByte reports whether b may be in a metric name (metric) or label name unquoted, first
// or later.
func isNameByte(b byte, first, metric bool) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '_' || metric && b == ':' || !first && '0' <= b && b <= '9'
}

// isLegacyName reports whether s is a valid metric name (metric) or label name in the
// original Prometheus character set: [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*.
func isLegacyName(s string, metric bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0, metric) {
			return false
		}
	}
	return true
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// trimBlanks drops leading spaces and tabs, the only blanks of the format.
func trimBlanks(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

// cutBlank splits s at its first blank, which stays with the rest; ok is false when s has
// none.
func cutBlank(s string) (before, rest string, ok bool) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", false
}

// cutToken splits s at its first blank: the token before it and the rest from the blank on.
func cutToken(s string) (token, rest string) {
	token, rest, _ = cutBlank(s)
	return token, rest
}
