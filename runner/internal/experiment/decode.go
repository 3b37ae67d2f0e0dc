package experiment

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Version is the experiment file format version this package reads.
const Version = 1

// The keys each mapping of the format accepts, in the order docs/experiments.md documents them.
var (
	topKeys      = []string{"version", "name", "description", "server", "request", "matrix", "repetitions", "warmup", "cache", "order", "timeouts", "load", "slo"}
	serverKeys   = append(sectionKeys("server"), "args", "env", "command")
	requestKeys  = append(sectionKeys("request"), "prompts", "stop", "extra")
	loadKeys     = sectionKeys("load")
	sloKeys      = []string{"ttft_ms", "tpot_event_ms", "tpot_token_ms", "e2e_ms"}
	promptKeys   = []string{"name", "text"}
	orderKeys    = []string{"mode", "seed"}
	timeoutKeys  = []string{"request"}
	orderModes   = []string{"sequential", "interleaved", "shuffled"}
	promptNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// reservedExtra names request-body keys that extra may not set: the runner owns the first group,
// and the second has its own field in request.
var reservedExtra = map[string]string{
	"model": "", "prompt": "", "messages": "", "stream": "", "stream_options": "",
	"max_tokens": "request.max_tokens", "ignore_eos": "request.ignore_eos", "min_tokens": "request.min_tokens",
	"temperature": "request.temperature", "seed": "request.seed", "stop": "request.stop",
}

// sectionKeys lists the scalar field names of one section (server, request) from the field table.
func sectionKeys(section string) []string {
	var out []string
	for _, f := range fields {
		if rest, ok := strings.CutPrefix(f.path, section+"."); ok {
			out = append(out, rest)
		}
	}
	return out
}

// decoder turns a checked YAML tree into an Experiment, collecting every problem it meets.
type decoder struct {
	file    string
	errs    ErrorList
	pos     map[string]pos // field path → position of the node that gave its value
	unknown map[*Error]bool
}

// pair is one key and value of a mapping.
type pair struct {
	key  string
	kn   *yaml.Node // the key node
	val  *yaml.Node // the value node, aliases resolved
	path string
}

func (d *decoder) errorAt(n *yaml.Node, path, format string, args ...any) {
	p := at(n)
	d.errs = append(d.errs, &Error{File: d.file, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// mapping checks that n is a mapping whose keys are all known and returns its pairs in file
// order; it returns ok false when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) (pairs []pair, ok bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.errorAt(n, path, "must be a mapping (key: value lines), not %s", describe(n))
		return nil, false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := resolve(n.Content[i])
		if kn == nil || kn.Kind != yaml.ScalarNode || seen[kn.Value] {
			continue // reported by checkShape
		}
		seen[kn.Value] = true
		kp := keyPath(path, kn.Value)
		if known != nil && !slices.Contains(known, kn.Value) {
			d.errorAt(n.Content[i], kp, "unknown field %q%s", kn.Value, suggestField(path, kn.Value, known))
			if d.unknown == nil {
				d.unknown = map[*Error]bool{}
			}
			d.unknown[d.errs[len(d.errs)-1]] = true
			continue
		}
		pairs = append(pairs, pair{key: kn.Value, kn: n.Content[i], val: resolve(n.Content[i+1]), path: kp})
	}
	return pairs, true
}

// suggestField proposes a close key, or the section a misplaced key belongs to.
func suggestField(section, key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return s
	}
	if section == "slo" {
		// A unit left out (ttft for ttft_ms) is too far for a typo's suggestion.
		for _, k := range known {
			if strings.TrimSuffix(k, "_ms") == key {
				return fmt.Sprintf(" (did you mean %q?)", k)
			}
		}
		return " (the bounds are " + strings.Join(known, ", ") + ", in milliseconds)"
	}
	if section == "" {
		for _, f := range fields {
			if f.short() == key && strings.Contains(f.path, ".") {
				return fmt.Sprintf(" (it belongs under %s: %s)", strings.TrimSuffix(f.path, "."+key), f.path)
			}
		}
		for _, k := range []string{"prompts", "stop", "extra"} {
			if key == k {
				return " (it belongs under request)"
			}
		}
		for _, k := range []string{"args", "env", "command"} {
			if key == k {
				return " (it belongs under server)"
			}
		}
	}
	return ""
}

// scalar decodes the value of a scalar field from the table and records where it came from.
func (d *decoder) scalar(f *field, p pair) (any, bool) {
	n := p.val
	if n == nil || n.Kind != yaml.ScalarNode {
		d.errorAt(n, p.path, "%s", kindProblem(f, n))
		return nil, false
	}
	v, msg := f.normalize(scalarValue(n))
	if msg != "" {
		d.errorAt(n, p.path, "%s", msg)
		return nil, false
	}
	d.pos[p.path] = at(n)
	return v, true
}

// kindProblem explains that a non-scalar node was given for a scalar field.
func kindProblem(f *field, n *yaml.Node) string {
	want := map[kind]string{kindString: "a string", kindInt: "an integer", kindNumber: "a number", kindBool: "true or false", kindDuration: "a duration such as \"30s\""}[f.kind]
	return fmt.Sprintf("must be %s, not %s", want, describe(n))
}

// decode builds the experiment from the root node.
func (d *decoder) decode(root *yaml.Node) *Experiment {
	e := &Experiment{}
	var base Config
	d.pos[""] = at(root)
	pairs, ok := d.mapping(root, "", topKeys)
	if !ok {
		return e
	}
	have := map[string]bool{}
	for _, p := range pairs {
		have[p.key] = true
		switch p.key {
		case "version":
			if p.val == nil || p.val.Kind != yaml.ScalarNode {
				d.errorAt(p.val, p.path, "must be %d, not %s", Version, describe(p.val))
				continue
			}
			switch v := scalarValue(p.val).(type) {
			case int:
				if v != Version {
					d.errorAt(p.val, p.path, "unsupported version %d; this runner reads version %d", v, Version)
					continue
				}
				e.Version = v
			default:
				d.errorAt(p.val, p.path, "must be %d, not %s", Version, describeValue(v))
			}
		case "name":
			if s, ok := d.str(p); ok {
				switch {
				case len(s) > maxNameLen:
					d.errorAt(p.val, p.path, "must be at most %d characters", maxNameLen)
				case !nameRE.MatchString(s):
					d.errorAt(p.val, p.path, "must use only a-z, 0-9, '.', '_' and '-', and start with a letter or digit (it becomes part of result paths), not %q", s)
				default:
					e.Name = s
				}
			}
		case "description":
			if s, ok := d.str(p); ok {
				e.Description = s
			}
		case "server":
			d.server(p, &base)
		case "request":
			d.request(p, &base)
		case "matrix":
			d.matrix(p, e)
		case "repetitions", "warmup", "cache":
			f := fieldByPath(p.key)
			if v, ok := d.scalar(f, p); ok {
				f.set(&base, v)
			}
		case "order":
			d.order(p, e)
		case "timeouts":
			d.timeouts(p, &base)
		case "load":
			d.pos[p.path] = at(p.kn)
			if pairs, ok := d.mapping(p.val, p.path, loadKeys); ok {
				loadOf(&base) // an empty section still makes every config a load point
				d.fieldsOf("load", pairs, &base)
			}
		case "slo":
			e.SLO = d.slo(p)
		}
	}
	for _, k := range []string{"version", "name"} {
		if !have[k] {
			d.errorAt(root, k, "missing required field %q", k)
		}
	}
	e.Server, e.Request, e.Load = base.Server, base.Request, base.Load
	e.Repetitions, e.Warmup, e.Cache, e.Timeouts = base.Repetitions, base.Warmup, base.Cache, base.Timeouts
	if !have["warmup"] {
		e.Warmup = DefaultWarmup
	}
	if e.Repetitions == 0 {
		e.Repetitions = DefaultRepetitions
	}
	if e.Timeouts.Request == 0 {
		e.Timeouts.Request = DefaultRequestTimeout
	}
	if e.Order.Mode == "" {
		e.Order.Mode = DefaultOrder
	}
	if e.Matrix.Axes != nil {
		d.checkExcludeKeys(e)
	}
	return e
}

// slo decodes the service-level objective: bounds in milliseconds on summarised metrics.
func (d *decoder) slo(p pair) []Bound {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, sloKeys)
	if !ok {
		return nil
	}
	if n := resolve(p.val); n != nil && len(n.Content) == 0 {
		d.errorAt(p.val, p.path, "must set at least one bound: %s", strings.Join(sloKeys, ", "))
		return nil
	}
	f := &field{kind: kindNumber, positive: true, hasMax: true, max: 1e9}
	var out []Bound
	for _, q := range pairs {
		if v, ok := d.scalar(f, q); ok {
			out = append(out, Bound{Metric: q.key, Max: v.(float64)})
		}
	}
	return out
}

// str decodes a plain string value.
func (d *decoder) str(p pair) (string, bool) {
	if p.val == nil || p.val.Kind != yaml.ScalarNode {
		d.errorAt(p.val, p.path, "must be a string, not %s", describe(p.val))
		return "", false
	}
	s, ok := scalarValue(p.val).(string)
	if !ok {
		d.errorAt(p.val, p.path, "must be a string, not %s (quote it)", describe(p.val))
		return "", false
	}
	d.pos[p.path] = at(p.val)
	return s, true
}

// fieldsOf decodes the scalar fields of a section from the table, returning the other pairs.
func (d *decoder) fieldsOf(section string, pairs []pair, c *Config) []pair {
	var rest []pair
	for _, p := range pairs {
		f := fieldByPath(section + "." + p.key)
		if f == nil {
			rest = append(rest, p)
			continue
		}
		if v, ok := d.scalar(f, p); ok {
			f.set(c, v)
		}
	}
	return rest
}

func (d *decoder) server(p pair, c *Config) {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, serverKeys)
	if !ok {
		return
	}
	for _, q := range d.fieldsOf("server", pairs, c) {
		switch q.key {
		case "args":
			if args, ok := d.argv(q, false); ok {
				c.Server.Args = args
			}
		case "command":
			if args, ok := d.argv(q, true); ok {
				c.Server.Command = args
			}
		case "env":
			c.Server.Env = d.env(q)
		}
	}
}

// argv decodes a list of command-line arguments. Numbers and booleans are taken as written, so
// `- 8` and `- "8"` are the same argument.
func (d *decoder) argv(p pair, nonEmpty bool) ([]string, bool) {
	n := p.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, p.path, "must be a list of arguments, not %s", describe(n))
		return nil, false
	}
	if nonEmpty && len(n.Content) == 0 {
		d.errorAt(n, p.path, "must not be empty")
		return nil, false
	}
	d.pos[p.path] = at(n)
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		c = resolve(c)
		if c == nil || c.Kind != yaml.ScalarNode || scalarValue(c) == nil {
			d.errorAt(c, indexPath(p.path, i), "an argument must be a string, not %s", describe(c))
			ok = false
			continue
		}
		out = append(out, c.Value)
	}
	return out, ok
}

func (d *decoder) env(p pair) map[string]string {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, nil)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(pairs))
	for _, q := range pairs {
		if !envNameRE.MatchString(q.key) {
			d.errorAt(q.kn, q.path, "%q is not a valid environment variable name (letters, digits, _)", q.key)
			continue
		}
		if q.val == nil || q.val.Kind != yaml.ScalarNode || scalarValue(q.val) == nil {
			d.errorAt(q.val, q.path, "must be a string, not %s", describe(q.val))
			continue
		}
		out[q.key] = q.val.Value
	}
	return out
}

func (d *decoder) request(p pair, c *Config) {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, requestKeys)
	if !ok {
		return
	}
	for _, q := range d.fieldsOf("request", pairs, c) {
		switch q.key {
		case "prompts":
			c.Request.Prompts = d.prompts(q)
		case "stop":
			c.Request.Stop = d.stop(q)
		case "extra":
			c.Request.Extra = d.extra(q)
		}
	}
}

func (d *decoder) prompts(p pair) []NamedPrompt {
	n := p.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, p.path, "must be a list of {name, text} entries, not %s", describe(n))
		return nil
	}
	if len(n.Content) == 0 {
		d.errorAt(n, p.path, "must not be empty")
		return nil
	}
	d.pos[p.path] = at(n)
	var out []NamedPrompt
	names := map[string]int{}
	for i, c := range n.Content {
		ip := indexPath(p.path, i)
		d.pos[ip] = at(resolve(c))
		pairs, ok := d.mapping(c, ip, promptKeys)
		if !ok {
			continue
		}
		var np NamedPrompt
		var hasName, hasText bool
		for _, q := range pairs {
			s, ok := d.str(q)
			if !ok {
				continue
			}
			switch {
			case s == "":
				d.errorAt(q.val, q.path, "must not be empty")
			case q.key == "name":
				hasName = true
				if !promptNameRE.MatchString(s) {
					d.errorAt(q.val, q.path, "must use only letters, digits, '.', '_' and '-' (it appears in config labels), not %q", s)
				} else if first, dup := names[s]; dup {
					d.errorAt(q.val, q.path, "prompt name %q is already used by %s", s, indexPath(p.path, first))
				} else {
					names[s] = i
					np.Name = s
				}
			default:
				hasText = true
				np.Text = s
			}
		}
		for _, k := range []struct {
			has  bool
			name string
		}{{hasName, "name"}, {hasText, "text"}} {
			if !k.has && !slices.ContainsFunc(pairs, func(q pair) bool { return q.key == k.name }) {
				d.errorAt(c, ip, "missing required field %q", k.name)
			}
		}
		if np.Name != "" && np.Text != "" {
			out = append(out, np)
		}
	}
	return out
}

func (d *decoder) stop(p pair) []string {
	n := p.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, p.path, "must be a list of strings, not %s", describe(n))
		return nil
	}
	d.pos[p.path] = at(n)
	var out []string
	for i, c := range n.Content {
		c = resolve(c)
		s, ok := any(nil), false
		if c != nil && c.Kind == yaml.ScalarNode {
			s = scalarValue(c)
			_, ok = s.(string)
		}
		if !ok {
			d.errorAt(c, indexPath(p.path, i), "must be a string, not %s", describe(c))
			continue
		}
		if s == "" {
			d.errorAt(c, indexPath(p.path, i), "must not be empty")
			continue
		}
		out = append(out, s.(string))
	}
	return out
}

func (d *decoder) extra(p pair) map[string]any {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, nil)
	if !ok {
		return nil
	}
	out := make(map[string]any, len(pairs))
	for _, q := range pairs {
		if field, reserved := reservedExtra[q.key]; reserved {
			if field == "" {
				d.errorAt(q.kn, q.path, "%q is set by the runner and cannot be overridden", q.key)
			} else {
				d.errorAt(q.kn, q.path, "%q has its own field; use %s instead", q.key, field)
			}
			continue
		}
		v := generic(q.val)
		if bad := findNonFinite(v); bad != "" {
			d.errorAt(q.val, q.path, "%s is not valid in JSON; use a finite number", bad)
			continue
		}
		out[q.key] = v
	}
	return out
}

// findNonFinite returns the first .nan or .inf inside a generic value, or "".
func findNonFinite(v any) string {
	switch x := v.(type) {
	case nonFinite:
		return string(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s := findNonFinite(x[k]); s != "" {
				return s
			}
		}
	case []any:
		for _, e := range x {
			if s := findNonFinite(e); s != "" {
				return s
			}
		}
	}
	return ""
}

func (d *decoder) order(p pair, e *Experiment) {
	n := p.val
	if n != nil && n.Kind == yaml.ScalarNode {
		s, ok := scalarValue(n).(string)
		if !ok || !slices.Contains(orderModes, s) {
			d.errorAt(n, p.path, "must be one of %s (or a mapping {mode, seed}), not %s%s", strings.Join(orderModes, ", "), describe(n), suggest(n.Value, orderModes))
			return
		}
		d.pos[p.path] = at(n)
		e.Order.Mode = s
		return
	}
	if n == nil || n.Kind != yaml.MappingNode {
		d.errorAt(n, p.path, "must be one of %s, or a mapping {mode, seed}, not %s", strings.Join(orderModes, ", "), describe(n))
		return
	}
	d.pos[p.path] = at(n)
	pairs, _ := d.mapping(n, p.path, orderKeys)
	var seedPair *pair
	for _, q := range pairs {
		switch q.key {
		case "mode":
			s, ok := d.str(q)
			if !ok {
				continue
			}
			if !slices.Contains(orderModes, s) {
				d.errorAt(q.val, q.path, "must be one of %s, not %q%s", strings.Join(orderModes, ", "), s, suggest(s, orderModes))
				continue
			}
			e.Order.Mode = s
		case "seed":
			if q.val == nil || q.val.Kind != yaml.ScalarNode {
				d.errorAt(q.val, q.path, "must be an integer, not %s", describe(q.val))
				continue
			}
			v, ok := scalarValue(q.val).(int)
			if !ok {
				d.errorAt(q.val, q.path, "must be an integer, not %s", describe(q.val))
				continue
			}
			d.pos[q.path] = at(q.val)
			e.Order.Seed = int64(v)
			seedPair = &q
		}
	}
	if !slices.ContainsFunc(pairs, func(q pair) bool { return q.key == "mode" }) {
		d.errorAt(n, keyPath(p.path, "mode"), "missing required field \"mode\"")
	}
	if seedPair != nil && e.Order.Mode != "" && e.Order.Mode != "shuffled" {
		d.errorAt(seedPair.val, seedPair.path, "a seed applies only to order mode shuffled, not %s", e.Order.Mode)
	}
}

func (d *decoder) timeouts(p pair, c *Config) {
	d.pos[p.path] = at(p.kn)
	pairs, _ := d.mapping(p.val, p.path, timeoutKeys)
	for _, q := range pairs {
		f := fieldByPath(q.path)
		if v, ok := d.scalar(f, q); ok {
			f.set(c, v)
		}
	}
}

// matrix decodes the axes and the include and exclude lists. Every axis value is checked against
// its field, so a bad value is reported where it is written.
func (d *decoder) matrix(p pair, e *Experiment) {
	d.pos[p.path] = at(p.kn)
	pairs, ok := d.mapping(p.val, p.path, nil)
	if !ok {
		return
	}
	e.Matrix.Axes = []Axis{}
	for _, q := range pairs {
		switch q.key {
		case "include":
			e.Matrix.Include = d.entries(q)
		case "exclude":
			e.Matrix.Exclude = d.entries(q)
		default:
			f := d.axisField(q.kn, q.path, q.key)
			if f == nil {
				continue
			}
			n := q.val
			if n == nil || n.Kind != yaml.SequenceNode {
				d.errorAt(n, q.path, "an axis must be a list of values, not %s", describe(n))
				continue
			}
			if len(n.Content) == 0 {
				d.errorAt(n, q.path, "an axis must have at least one value")
				continue
			}
			d.pos[q.path] = at(q.kn)
			axis := Axis{Path: q.key}
			seen := map[any]int{} // value → index
			good := true
			for i, c := range n.Content {
				ip := indexPath(q.path, i)
				c = resolve(c)
				if c == nil || c.Kind != yaml.ScalarNode {
					d.errorAt(c, ip, "%s", kindProblem(f, c))
					good = false
					continue
				}
				raw := scalarValue(c)
				v, msg := f.normalize(raw)
				if msg != "" {
					d.errorAt(c, ip, "%s", msg)
					good = false
					continue
				}
				if j, dup := seen[v]; dup {
					d.errorAt(c, ip, "value %s is already listed at %s", formatValue(raw), indexPath(q.path, j))
					good = false
					continue
				}
				seen[v] = i
				d.pos[ip] = at(c)
				axis.Values = append(axis.Values, raw)
			}
			if good {
				e.Matrix.Axes = append(e.Matrix.Axes, axis)
			}
		}
	}
}

// axisField finds the field an axis key names, reporting a key that names none or names a field
// that cannot be swept.
func (d *decoder) axisField(kn *yaml.Node, path, key string) *field {
	f := fieldByPath(key)
	switch {
	case f != nil && f.axis:
		return f
	case f != nil:
		d.errorAt(kn, path, "%s cannot be a matrix axis; it applies to the whole experiment", key)
	case slices.Contains([]string{"server.args", "server.env", "server.command", "request.prompts", "request.stop", "request.extra"}, key):
		d.errorAt(kn, path, "%s cannot be a matrix axis; only single-valued fields can be swept", key)
	default:
		hint := suggest(key, axisPaths())
		if hint == "" {
			for _, ap := range axisPaths() {
				if fieldByPath(ap).short() == key {
					hint = fmt.Sprintf(" (did you mean %q?)", ap)
				}
			}
		}
		d.errorAt(kn, path, "unknown axis %q: an axis is named by the dotted path of the field it sweeps, such as request.max_tokens%s", key, hint)
	}
	return nil
}

// entries decodes an include or exclude list.
func (d *decoder) entries(p pair) []map[string]any {
	n := p.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, p.path, "must be a list of mappings, not %s", describe(n))
		return nil
	}
	d.pos[p.path] = at(n)
	out := []map[string]any{}
	for i, c := range n.Content {
		ip := indexPath(p.path, i)
		d.pos[ip] = at(resolve(c))
		pairs, ok := d.mapping(c, ip, nil)
		if !ok {
			continue
		}
		if len(pairs) == 0 {
			d.errorAt(resolve(c), ip, "an entry must name at least one field")
			continue
		}
		m := map[string]any{}
		for _, q := range pairs {
			f := d.axisField(q.kn, q.path, q.key)
			if f == nil {
				continue
			}
			if q.val == nil || q.val.Kind != yaml.ScalarNode {
				d.errorAt(q.val, q.path, "%s", kindProblem(f, q.val))
				continue
			}
			raw := scalarValue(q.val)
			if _, msg := f.normalize(raw); msg != "" {
				d.errorAt(q.val, q.path, "%s", msg)
				continue
			}
			d.pos[q.path] = at(q.val)
			m[q.key] = raw
		}
		out = append(out, m) // kept even when part of it is bad, so indices match the file
	}
	return out
}

// checkExcludeKeys reports exclude entries that name a field that is not a matrix axis: they
// could never match.
func (d *decoder) checkExcludeKeys(e *Experiment) {
	for i, m := range e.Matrix.Exclude {
		for k := range m {
			if !slices.ContainsFunc(e.Matrix.Axes, func(a Axis) bool { return a.Path == k }) {
				path := keyPath(indexPath("matrix.exclude", i), k)
				p := d.pos[path]
				d.errs = append(d.errs, &Error{File: d.file, Line: p.Line, Col: p.Col, Path: path, Msg: notAxisMsg(k)})
			}
		}
	}
}
