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

// errorAt records a problem about path at the position of node n.
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

// section records the position of p's key as the section's and returns the pairs of its value
// as mapping does.
func (d *decoder) section(p pair, known []string) ([]pair, bool) {
	d.pos[p.path] = at(p.kn)
	return d.mapping(p.val, p.path, known)
}

// list returns p's value and records its position when it is a list, and a non-empty one if
// nonEmpty; otherwise it records that p must be a list of what, or must not be empty.
func (d *decoder) list(p pair, what string, nonEmpty bool) (*yaml.Node, bool) {
	n := p.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, p.path, "must be a list of %s, not %s", what, describe(n))
		return nil, false
	}
	if nonEmpty && len(n.Content) == 0 {
		d.errorAt(n, p.path, "must not be empty")
		return nil, false
	}
	d.pos[p.path] = at(n)
	return n, true
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
	v, msg := f.normalizeNode(n)
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
			d.version(p, e)
		case "name":
			d.name(p, e)
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
			if pairs, ok := d.section(p, loadKeys); ok {
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
	e.applyDefaults(have["warmup"])
	if e.Matrix.Axes != nil {
		d.checkExcludeKeys(e)
	}
	return e
}

// version decodes the format version, which must be the one this package reads.
func (d *decoder) version(p pair, e *Experiment) {
	if p.val == nil || p.val.Kind != yaml.ScalarNode {
		d.errorAt(p.val, p.path, "must be %d, not %s", Version, describe(p.val))
		return
	}
	switch v := scalarValue(p.val).(type) {
	case int:
		if v != Version {
			d.errorAt(p.val, p.path, "unsupported version %d; this runner reads version %d", v, Version)
			return
		}
		e.Version = v
	default:
		d.errorAt(p.val, p.path, "must be %d, not %s", Version, describeValue(v))
	}
}

// name decodes the experiment's name, which becomes part of result paths.
func (d *decoder) name(p pair, e *Experiment) {
	s, ok := d.str(p)
	if !ok {
		return
	}
	switch {
	case len(s) > maxNameLen:
		d.errorAt(p.val, p.path, "must be at most %d characters", maxNameLen)
	case !nameRE.MatchString(s):
		d.errorAt(p.val, p.path, "must use only a-z, 0-9, '.', '_' and '-', and start with a letter or digit (it becomes part of result paths), not %q", s)
	default:
		e.Name = s
	}
}

// slo decodes the service-level objective: bounds in milliseconds on summarised metrics.
func (d *decoder) slo(p pair) []Bound {
	pairs, ok := d.section(p, sloKeys)
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

// tableSection decodes a section whose scalar fields are in the table, as fieldsOf does, and
// returns its other pairs; none when its value is no mapping.
func (d *decoder) tableSection(p pair, known []string, c *Config) []pair {
	pairs, ok := d.section(p, known)
	if !ok {
		return nil
	}
	return d.fieldsOf(p.key, pairs, c)
}

// server decodes the server section: the scalar fields from the table, then the argument lists
// and the environment.
func (d *decoder) server(p pair, c *Config) {
	for _, q := range d.tableSection(p, serverKeys, c) {
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
	n, ok := d.list(p, "arguments", nonEmpty)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
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

// env decodes server.env, whose keys must be valid environment variable names and whose values
// are taken as written.
func (d *decoder) env(p pair) map[string]string {
	pairs, ok := d.section(p, nil)
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

// order decodes the order section, written either as a mode alone or as a mapping {mode, seed};
// a seed is allowed only for shuffled, the one mode it changes.
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
			if tooBigInt(q.val) {
				d.errorAt(q.val, q.path, "%s", intRange(q.val.Value))
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

// timeouts decodes the timeouts section from the field table.
func (d *decoder) timeouts(p pair, c *Config) {
	pairs, _ := d.section(p, timeoutKeys)
	for _, q := range pairs {
		f := fieldByPath(q.path)
		if v, ok := d.scalar(f, q); ok {
			f.set(c, v)
		}
	}
}
