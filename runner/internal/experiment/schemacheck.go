package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/xeipuuv/gojsonschema"
	"gopkg.in/yaml.v3"

	"github.com/onelayerdown/runner/schema"
)

// compiled is the embedded schema, compiled once.
var compiled = sync.OnceValues(func() (*gojsonschema.Schema, error) {
	return gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema.Experiment))
})

// wrappers are schema errors that only say a combination of subschemas failed; the errors of
// the subschemas say what is wrong.
var wrappers = map[string]bool{
	"number_one_of": true, "number_any_of": true, "number_all_of": true,
	"condition_then": true, "condition_else": true,
}

// schemaErrors validates the tree against the embedded JSON Schema and locates each error at
// the YAML node it is about.
func schemaErrors(file string, root *yaml.Node) ErrorList {
	s, err := compiled()
	if err != nil {
		return ErrorList{{File: file, Msg: fmt.Sprintf("compile the experiment schema: %v", err)}}
	}
	res, err := s.Validate(gojsonschema.NewGoLoader(generic(root)))
	if err != nil {
		return ErrorList{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("schema check: %v", err)}}
	}
	var errs ErrorList
	var kinds []string
	for _, re := range res.Errors() {
		// The context is the chain of keys and indices from the root; a NUL separator keeps
		// keys that contain dots (matrix axes) whole.
		segs := strings.Split(re.Context().String("\x00"), "\x00")
		n, path := locate(root, segs[1:])
		p := at(n)
		prop, _ := re.Details()["property"].(string)
		switch re.Type() {
		case "additional_property_not_allowed":
			path = keyPath(path, prop)
			if k := keyNode(n, prop); k != nil {
				p = at(k)
			}
		case "required":
			path = keyPath(path, prop)
		}
		errs = append(errs, &Error{File: file, Line: p.Line, Col: p.Col, Path: path, Msg: schemaMessage(re.Description())})
		kinds = append(kinds, re.Type())
	}
	// Drop a wrapper when something more specific is reported at or below its path.
	var out ErrorList
	for i, e := range errs {
		if wrappers[kinds[i]] && specificWithin(e.Path, errs, kinds) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// specificWithin reports whether an error that is not a wrapper is at path or below it.
func specificWithin(path string, errs ErrorList, kinds []string) bool {
	for j, o := range errs {
		if !wrappers[kinds[j]] && within(o.Path, path) {
			return true
		}
	}
	return false
}

// within reports whether path is base or a field below it.
func within(path, base string) bool {
	if base == "" || path == base {
		return true
	}
	return strings.HasPrefix(path, base+".") || strings.HasPrefix(path, base+"[")
}

// schemaMessage adapts a gojsonschema description to this package's style: lowercase, no final
// period.
func schemaMessage(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if r := []rune(s); len(r) > 0 {
		r[0] = unicode.ToLower(r[0])
		s = string(r)
	}
	return s
}

// locate follows schema context segments from the root to a node, returning the deepest node it
// reaches and its field path.
func locate(root *yaml.Node, segs []string) (*yaml.Node, string) {
	n, path := resolve(root), ""
	for _, s := range segs {
		if n == nil {
			break
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := resolve(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == s {
					next = resolve(n.Content[i+1])
					break
				}
			}
			if next == nil {
				return n, path
			}
			n, path = next, keyPath(path, s)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n, path
			}
			n, path = resolve(n.Content[i]), indexPath(path, i)
		default:
			return n, path
		}
	}
	return n, path
}

// keyNode finds the key node of a mapping entry.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// merge adds to the decoder's errors the schema errors about fields the decoder said nothing
// about, neither at the same field nor above or below it. Both check most rules; the decoder's messages are the more precise, and the schema
// catches anything the decoder might miss.
func merge(decoded, fromSchema ErrorList) ErrorList {
	out := append(ErrorList(nil), decoded...)
	for _, s := range fromSchema {
		covered := false
		for _, d := range decoded {
			if s.Path == d.Path || (s.Path != "" && d.Path != "" && (within(s.Path, d.Path) || within(d.Path, s.Path))) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	return out
}
