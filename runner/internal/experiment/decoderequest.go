package experiment

import (
	"slices"

	"gopkg.in/yaml.v3"
)

// reservedExtra names request-body keys that extra may not set: the runner owns the first group,
// and the second has its own field in request.
var reservedExtra = map[string]string{
	"model": "", "prompt": "", "messages": "", "stream": "", "stream_options": "",
	"max_tokens": "request.max_tokens", "ignore_eos": "request.ignore_eos", "min_tokens": "request.min_tokens",
	"temperature": "request.temperature", "seed": "request.seed", "stop": "request.stop",
}

// request decodes the request section: the scalar fields from the table, then the named
// prompts, the stop strings and the extra body fields.
func (d *decoder) request(p pair, c *Config) {
	for _, q := range d.tableSection(p, requestKeys, c) {
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

// prompts decodes request.prompts, a non-empty list of {name, text} entries with distinct names.
// An entry with a problem is left out, after its problems are recorded.
func (d *decoder) prompts(p pair) []NamedPrompt {
	n, ok := d.list(p, "{name, text} entries", true)
	if !ok {
		return nil
	}
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

// stop decodes request.stop, a list of non-empty strings.
func (d *decoder) stop(p pair) []string {
	n, ok := d.list(p, "strings", false)
	if !ok {
		return nil
	}
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

// extra decodes request.extra, the fields merged into the request body. A key the runner sets
// itself or that has a field of its own is refused, and so is a value JSON cannot encode.
func (d *decoder) extra(p pair) map[string]any {
	pairs, ok := d.section(p, nil)
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
