package experiment

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// matrix decodes the axes and the include and exclude lists. Every axis value is checked against
// its field, so a bad value is reported where it is written.
func (d *decoder) matrix(p pair, e *Experiment) {
	pairs, ok := d.section(p, nil)
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
			if axis, ok := d.axis(q); ok {
				e.Matrix.Axes = append(e.Matrix.Axes, axis)
			}
		}
	}
}

// axis decodes one axis: a list of distinct values, each checked against the field it sweeps. It
// reports false when any part of the axis is bad, so that the matrix is built of sound axes only.
func (d *decoder) axis(q pair) (Axis, bool) {
	f := d.axisField(q.kn, q.path, q.key)
	if f == nil {
		return Axis{}, false
	}
	n := q.val
	if n == nil || n.Kind != yaml.SequenceNode {
		d.errorAt(n, q.path, "an axis must be a list of values, not %s", describe(n))
		return Axis{}, false
	}
	if len(n.Content) == 0 {
		d.errorAt(n, q.path, "an axis must have at least one value")
		return Axis{}, false
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
		v, msg := f.normalizeNode(c)
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
	return axis, good
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
	n, ok := d.list(p, "mappings", false)
	if !ok {
		return nil
	}
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
			if _, msg := f.normalizeNode(q.val); msg != "" {
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
