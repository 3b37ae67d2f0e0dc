package experiment

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

// Engines lists the server.engine values, the default first: the names of the engine table.
var Engines = enginefacts.Names()

// Bounds of a load: a closed loop's requests in flight (and an open loop's cap), and an open
// loop's rate in requests per second.
const (
	MaxConcurrency = 10_000
	MaxRate        = 1_000_000
)

// kind is the type of a scalar field.
type kind int

const (
	kindString kind = iota
	kindInt
	kindNumber
	kindBool
	kindDuration
)

// field is one scalar field of the swept part of an experiment: it can be set in the file and,
// when axis is true, swept by a matrix axis. The same table decodes the file, checks axis values
// and applies them to configs.
type field struct {
	path     string   // dotted, e.g. request.max_tokens
	kind     kind     //
	enum     []string // allowed values of a string field
	min, max float64  // bounds of a numeric field, when hasMin/hasMax
	hasMin   bool
	hasMax   bool
	positive bool                // a number that must be above 0
	check    func(string) string // extra check of a string value; returns a problem or ""
	axis     bool                // can be swept
	set      func(c *Config, v any)
	isSet    func(c *Config) bool
}

// short is the field's name without its section, used in labels: max_tokens.
func (f *field) short() string {
	return f.path[strings.LastIndex(f.path, ".")+1:]
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// hostnameRE is RFC 1123: dot-separated labels of letters, digits and inner hyphens.
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	// numericRE matches a last label of digits only, which no host name has: 300.1.2.3 is a
	// mistyped address, not a name.
	numericRE = regexp.MustCompile(`(^|\.)[0-9]+$`)
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// maxTokens bounds every token count, far above any model's context, so that sums of counts
// cannot overflow.
const maxTokens = 1_000_000_000

// maxNameLen bounds an experiment name, which becomes part of result paths.
const maxNameLen = 64

// fields is the table of scalar fields, in the order the schema and docs/experiments.md list them.
var fields = []*field{
	{path: "server.engine", kind: kindString, enum: Engines, axis: true,
		set: func(c *Config, v any) { c.Server.Engine = v.(string) }, isSet: func(c *Config) bool { return c.Server.Engine != "" }},
	{path: "server.model", kind: kindString, axis: true,
		set: func(c *Config, v any) { c.Server.Model = v.(string) }, isSet: func(c *Config) bool { return c.Server.Model != "" }},
	{path: "server.dtype", kind: kindString, enum: []string{"auto", "half", "float16", "bfloat16", "float", "float32"}, axis: true,
		set: func(c *Config, v any) { c.Server.Dtype = v.(string) }, isSet: func(c *Config) bool { return c.Server.Dtype != "" }},
	{path: "server.max_model_len", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: maxTokens, axis: true,
		set: func(c *Config, v any) { c.Server.MaxModelLen = v.(int) }, isSet: func(c *Config) bool { return c.Server.MaxModelLen != 0 }},
	{path: "server.ready_timeout", kind: kindDuration, axis: true,
		set: func(c *Config, v any) { c.Server.ReadyTimeout = v.(time.Duration) }, isSet: func(c *Config) bool { return c.Server.ReadyTimeout != 0 }},
	{path: "server.host", kind: kindString, check: checkHost, axis: true,
		set: func(c *Config, v any) { c.Server.Host = v.(string) }, isSet: func(c *Config) bool { return c.Server.Host != "" }},
	{path: "server.port", kind: kindInt, hasMin: true, min: 0, hasMax: true, max: 65535, axis: true,
		set: func(c *Config, v any) { c.Server.Port = v.(int) }, isSet: func(c *Config) bool { return c.Server.Port != 0 }},
	{path: "server.url", kind: kindString, check: checkURL, axis: true,
		set: func(c *Config, v any) { c.Server.URL = v.(string) }, isSet: func(c *Config) bool { return c.Server.URL != "" }},
	{path: "server.api_key_env", kind: kindString, check: checkEnvName, axis: true,
		set: func(c *Config, v any) { c.Server.APIKeyEnv = v.(string) }, isSet: func(c *Config) bool { return c.Server.APIKeyEnv != "" }},
	{path: "server.entrypoint", kind: kindString, enum: []string{"serve", "api_server"}, axis: true,
		set: func(c *Config, v any) { c.Server.Entrypoint = v.(string) }, isSet: func(c *Config) bool { return c.Server.Entrypoint != "" }},
	{path: "server.ready_path", kind: kindString, check: checkURLPath, axis: true,
		set: func(c *Config, v any) { c.Server.ReadyPath = v.(string) }, isSet: func(c *Config) bool { return c.Server.ReadyPath != "" }},

	{path: "request.api", kind: kindString, enum: []string{"completions", "chat"}, axis: true,
		set: func(c *Config, v any) { c.Request.API = v.(string) }, isSet: func(c *Config) bool { return c.Request.API != "" }},
	{path: "request.prompt", kind: kindString, axis: true,
		set: func(c *Config, v any) { c.Request.Prompt = v.(string) }, isSet: func(c *Config) bool { return c.Request.Prompt != "" }},
	{path: "request.prompt_name", kind: kindString, axis: true,
		set: func(c *Config, v any) { c.Request.PromptName = v.(string) }, isSet: func(c *Config) bool { return c.Request.PromptName != "" }},
	{path: "request.prompt_tokens", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: maxTokens, axis: true,
		set: func(c *Config, v any) { c.Request.PromptTokens = v.(int) }, isSet: func(c *Config) bool { return c.Request.PromptTokens != 0 }},
	{path: "request.max_tokens", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: maxTokens, axis: true,
		set: func(c *Config, v any) { c.Request.MaxTokens = v.(int) }, isSet: func(c *Config) bool { return c.Request.MaxTokens != 0 }},
	{path: "request.ignore_eos", kind: kindBool, axis: true,
		set: func(c *Config, v any) { b := v.(bool); c.Request.IgnoreEOS = &b }, isSet: func(c *Config) bool { return c.Request.IgnoreEOS != nil }},
	{path: "request.min_tokens", kind: kindInt, hasMin: true, min: 0, hasMax: true, max: maxTokens, axis: true,
		set: func(c *Config, v any) { i := v.(int); c.Request.MinTokens = &i }, isSet: func(c *Config) bool { return c.Request.MinTokens != nil }},
	{path: "request.temperature", kind: kindNumber, hasMin: true, min: 0, axis: true,
		set: func(c *Config, v any) { f := v.(float64); c.Request.Temperature = &f }, isSet: func(c *Config) bool { return c.Request.Temperature != nil }},
	{path: "request.seed", kind: kindInt, axis: true,
		set: func(c *Config, v any) { i := v.(int); c.Request.Seed = &i }, isSet: func(c *Config) bool { return c.Request.Seed != nil }},

	{path: "load.concurrency", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: MaxConcurrency, axis: true,
		set: func(c *Config, v any) { loadOf(c).Concurrency = v.(int) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Concurrency != 0 }},
	{path: "load.rate", kind: kindNumber, positive: true, hasMax: true, max: MaxRate, axis: true,
		set: func(c *Config, v any) { loadOf(c).Rate = v.(float64) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Rate != 0 }},
	{path: "load.arrival", kind: kindString, enum: []string{"constant", "poisson", "gamma"}, axis: true,
		set: func(c *Config, v any) { loadOf(c).Arrival = v.(string) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Arrival != "" }},
	{path: "load.burstiness", kind: kindNumber, positive: true, hasMax: true, max: 1000, axis: true,
		set: func(c *Config, v any) { loadOf(c).Burstiness = v.(float64) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Burstiness != 0 }},
	{path: "load.max_concurrency", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: MaxConcurrency, axis: true,
		set: func(c *Config, v any) { loadOf(c).MaxConcurrency = v.(int) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.MaxConcurrency != 0 }},
	{path: "load.seed", kind: kindInt, axis: true,
		set: func(c *Config, v any) { loadOf(c).Seed = int64(v.(int)) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Seed != 0 }},
	{path: "load.prompts", kind: kindString, enum: []string{"distinct", "shared"}, axis: true,
		set: func(c *Config, v any) { loadOf(c).Prompts = v.(string) }, isSet: func(c *Config) bool { return c.Load != nil && c.Load.Prompts != "" }},

	{path: "repetitions", kind: kindInt, hasMin: true, min: 1, hasMax: true, max: MaxRepetitions,
		set: func(c *Config, v any) { c.Repetitions = v.(int) }, isSet: func(c *Config) bool { return c.Repetitions != 0 }},
	{path: "warmup", kind: kindInt, hasMin: true, min: 0, hasMax: true, max: MaxWarmup,
		set: func(c *Config, v any) { c.Warmup = v.(int) }, isSet: func(c *Config) bool { return c.Warmup != 0 }},
	{path: "cache", kind: kindString, enum: []string{"reset", "reset_per_config", "keep"}, axis: true,
		set: func(c *Config, v any) { c.Cache = v.(string) }, isSet: func(c *Config) bool { return c.Cache != "" }},
	{path: "timeouts.request", kind: kindDuration,
		set: func(c *Config, v any) { c.Timeouts.Request = v.(time.Duration) }, isSet: func(c *Config) bool { return c.Timeouts.Request != 0 }},
}

// loadOf returns c's load, made when c has none yet: setting any load field makes the config
// a load point.
func loadOf(c *Config) *LoadSpec {
	if c.Load == nil {
		c.Load = &LoadSpec{}
	}
	return c.Load
}

// fieldByPath finds a scalar field by its dotted path.
func fieldByPath(path string) *field {
	for _, f := range fields {
		if f.path == path {
			return f
		}
	}
	return nil
}

// axisPaths lists the paths that can be matrix axes, in table order.
func axisPaths() []string {
	var out []string
	for _, f := range fields {
		if f.axis {
			out = append(out, f.path)
		}
	}
	return out
}

// AxisPaths returns the dotted paths of the fields a matrix axis can sweep.
func AxisPaths() []string { return axisPaths() }

// AxisType returns the type of the values of the matrix axis path, as a table of results
// types its column: "int", "float" (a number), "bool" or "string" (text, and a duration,
// which is written as Go writes one, "2m0s"). A path that is no axis is "string".
func AxisType(path string) string {
	f := fieldByPath(path)
	if f == nil {
		return "string"
	}
	switch f.kind {
	case kindInt:
		return "int"
	case kindNumber:
		return "float"
	case kindBool:
		return "bool"
	}
	return "string"
}

// normalize checks a value for the field and converts it to the Go type its setter takes:
// string, int, float64, bool or time.Duration. It returns a problem instead when the value does
// not fit.
func (f *field) normalize(v any) (any, string) { return f.normalizeAs(v, "") }

// normalizeNode normalizes the value of a scalar node. Its problems print a number as the file
// writes it (1e300, not its 301 digits), and an integer too large for an int as out of range,
// not as "not an integer" (yaml.v3 reads it as a float).
func (f *field) normalizeNode(n *yaml.Node) (any, string) {
	if f.kind == kindInt && tooBigInt(n) {
		return nil, f.outOfRange(n.Value)
	}
	return f.normalizeAs(scalarValue(n), n.Value)
}

// intRE matches a plain scalar written as a YAML integer: decimal, hexadecimal, octal or binary.
var intRE = regexp.MustCompile(`^[-+]?(?:[0-9][0-9_]*|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)$`)

// tooBigInt reports whether a node is written as an integer that does not fit an int. yaml.v3
// tags such a decimal !!float and such a hexadecimal !!str, so the tag cannot tell; an
// explicit tag or quotes say it is no integer.
func tooBigInt(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 ||
		n.Style&yaml.TaggedStyle != 0 || !intRE.MatchString(n.Value) {
		return false
	}
	// Not n.Decode: it converts a huge negative !!float to the smallest int without an error.
	_, err := strconv.ParseInt(n.Value, 0, strconv.IntSize)
	return errors.Is(err, strconv.ErrRange)
}

// outOfRange is the problem of an integer, as written, that does not fit an int: the field's
// bounds when it has them on that side, else the range of an int.
func (f *field) outOfRange(written string) string {
	x := math.Inf(1)
	if strings.HasPrefix(written, "-") {
		x = math.Inf(-1)
	}
	if msg := f.bounds(x, written); msg != "" {
		return msg
	}
	return intRange(written)
}

// intRange is the problem of an integer, as written, beyond the range of an int.
func intRange(written string) string {
	return fmt.Sprintf("is out of range: must be between %d and %d, not %s", math.MinInt, math.MaxInt, written)
}

// normalizeAs is normalize with the value as the file writes it, for its problems to print; ""
// prints the value itself.
func (f *field) normalizeAs(v any, written string) (any, string) {
	switch f.kind {
	case kindString:
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string, not " + describeValue(v)
		}
		if s == "" {
			return nil, "must not be empty"
		}
		if f.enum != nil && !slices.Contains(f.enum, s) {
			return nil, fmt.Sprintf("must be one of %s, not %q%s", strings.Join(f.enum, ", "), s, suggest(s, f.enum))
		}
		if f.check != nil {
			if msg := f.check(s); msg != "" {
				return nil, msg
			}
		}
		return s, ""
	case kindInt:
		var i int
		switch n := v.(type) {
		case int:
			i = n
		case int64:
			if n < math.MinInt || n > math.MaxInt {
				return nil, "is out of range"
			}
			i = int(n)
		case int32:
			i = int(n)
		default:
			return nil, "must be an integer, not " + describeValue(v)
		}
		// The bounds compare as floats, which round integers beyond 2^53: print the integer
		// itself, or as written.
		if written == "" {
			written = strconv.Itoa(i)
		}
		if msg := f.bounds(float64(i), written); msg != "" {
			return nil, msg
		}
		return i, ""
	case kindNumber:
		var x float64
		switch n := v.(type) {
		case int:
			x = float64(n)
		case int64:
			x = float64(n)
		case int32:
			x = float64(n)
		case float64:
			x = n
		default:
			return nil, "must be a number, not " + describeValue(v)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "must be a finite number"
		}
		if msg := f.bounds(x, written); msg != "" {
			return nil, msg
		}
		return x, ""
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false, not " + describeValue(v)
		}
		return b, ""
	case kindDuration:
		var d time.Duration
		switch x := v.(type) {
		case time.Duration:
			d = x
		case string:
			var err error
			d, err = time.ParseDuration(x)
			if err != nil {
				return nil, fmt.Sprintf("must be a duration such as \"30s\" or \"10m\", not %q", x)
			}
		case int, int64, float64:
			return nil, fmt.Sprintf("must be a duration with a unit, such as \"%vs\", not a bare number", x)
		default:
			return nil, "must be a duration such as \"30s\" or \"10m\", not " + describeValue(v)
		}
		if d <= 0 {
			return nil, "must be a positive duration"
		}
		return d, ""
	}
	return nil, "has an unknown type"
}

// bounds checks a number against the field's bounds; its problem prints the number as shown,
// or in a compact form when shown is "".
func (f *field) bounds(x float64, shown string) string {
	if shown == "" {
		shown = compact(x)
	}
	switch {
	case f.positive && !(x > 0):
		return fmt.Sprintf("must be above 0, not %s", shown)
	case f.hasMin && f.hasMax && (x < f.min || x > f.max) && f.max < maxTokens:
		return fmt.Sprintf("must be between %s and %s, not %s", compact(f.min), compact(f.max), shown)
	case f.hasMin && x < f.min:
		return fmt.Sprintf("must be at least %s, not %s", compact(f.min), shown)
	case f.hasMax && x > f.max:
		return fmt.Sprintf("must be at most %s, not %s", compact(f.max), shown)
	}
	return ""
}

// compact prints a number in full when it is a whole number of at most 15 digits (1000000),
// and in the shortest form otherwise (0.25, 1e+300), never as hundreds of digits.
func compact(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// CheckURL returns what is wrong with s as a server.url, or "" when it is a valid base URL.
func CheckURL(s string) string { return checkURL(s) }

// checkURL accepts a base URL: http or https, a host, and at most a path. Credentials are
// refused before anything else, and the message never quotes the URL then, so that a password
// in it reaches no terminal or CI log. A query or a fragment is refused too: the runner appends
// its own paths (/v1/models, /v1/completions) to the base URL, so a ?token=... would be sent
// nowhere useful and would be recorded in the log and the manifest.
func checkURL(s string) string {
	if hasUserinfo(s) {
		return "must not carry credentials (user:password@); put the key in an environment variable and name that variable in server.api_key_env"
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("must be an http or https URL such as http://127.0.0.1:8000, not %s", describeValue(s))
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "must not have a query (?...): it is the base URL the runner appends /v1/... to; pass an API key by naming its environment variable in server.api_key_env"
	}
	if strings.Contains(s, "#") {
		return "must not have a fragment (#...): it is the base URL the runner appends /v1/... to"
	}
	return ""
}

// hasUserinfo reports whether the authority of a URL, the part between the scheme and the path,
// holds an @, that is, a user name or a password. It does not need the URL to parse.
func hasUserinfo(s string) bool {
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return strings.Contains(s, "@")
}

// checkHost accepts an IP address (IPv6 without brackets, as the server's --host flag takes it)
// or a host name.
func checkHost(s string) string {
	if _, err := netip.ParseAddr(s); err == nil {
		return ""
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if _, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return fmt.Sprintf("must be an IPv6 address without brackets, such as %s, not %q", s[1:len(s)-1], s)
		}
	}
	if len(s) <= 253 && hostnameRE.MatchString(s) && !numericRE.MatchString(s) {
		return ""
	}
	return fmt.Sprintf("must be an IP address or a host name, such as 127.0.0.1, 0.0.0.0, ::1 or localhost, not %q", s)
}

// checkEnvName checks the name of a variable that holds a key. Its messages never repeat the
// value: a user who pasted the key itself must not see it printed, or logged by CI.
func checkEnvName(s string) string {
	if redact.LooksLikeKey(s) {
		return "looks like a key, not the name of an environment variable: put the key in a variable " +
			"(export OPENAI_API_KEY=...) and write the variable's name here"
	}
	if !envNameRE.MatchString(s) {
		return "must be the name of an environment variable (letters, digits, _), such as OPENAI_API_KEY"
	}
	return ""
}

func checkURLPath(s string) string {
	if !strings.HasPrefix(s, "/") {
		return fmt.Sprintf("must be a URL path starting with /, not %s", describeValue(s))
	}
	return ""
}

// formatValue renders an axis value as text: 64, 0.7, true, half, 30s.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprintf("%v", x)
	case time.Duration:
		return x.String()
	}
	return fmt.Sprint(v)
}

// suggest returns ` (did you mean "x"?)` when one of the candidates is close to s, or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len(s)/3)
	if bestD >= 0 && bestD <= limit && bestD < len(s) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// editDistance is the optimal-string-alignment distance between a and b, in bytes: the
// Levenshtein distance with a swap of two neighbours counting as one edit, the commonest typo.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
