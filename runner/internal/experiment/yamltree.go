package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/onelayerdown/runner/runner/internal/redact"
)

// Limits that keep a hostile or broken file from exhausting memory. An experiment file is a few
// kilobytes; these are far above any real one.
const (
	maxFileSize = 1 << 20 // bytes
	maxNodes    = 200_000 // YAML nodes visited, aliases expanded
	maxDepth    = 64      // nesting of mappings and sequences
)

// yamlLineRE matches the position yaml.v3 puts in its syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses data into its root node. A syntax error is returned alone: nothing after it
// can be trusted.
func parseYAML(file string, data []byte) (root *yaml.Node, err *Error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("file is %d bytes, more than the limit of %s", len(data), sizeLimit)}
	}
	defer func() {
		// yaml.v3 has panicked on malformed input in the past; a broken file must be an error,
		// not a crash.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if e := dec.Decode(&doc); e != nil {
		if errors.Is(e, io.EOF) {
			return nil, &Error{File: file, Line: 1, Col: 1, Msg: "file is empty"}
		}
		return nil, yamlError(file, data, e)
	}
	var extra yaml.Node
	switch e := dec.Decode(&extra); {
	case errors.Is(e, io.EOF):
	case e != nil:
		return nil, yamlError(file, data, e)
	default:
		return nil, &Error{File: file, Line: extra.Line, Col: extra.Column, Msg: "more than one YAML document; an experiment file holds exactly one"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: "file is empty"}
	}
	return doc.Content[0], nil
}

// yamlError turns a yaml.v3 error into a located Error. yaml.v3 names only the line; the column
// given is that of the line's first non-blank character.
func yamlError(file string, data []byte, err error) *Error {
	msg := err.Error()
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil {
			line = n
		}
		msg = m[2]
		// yaml.v3 numbers the lines of parser errors (as opposed to scanner errors) from 0; it
		// names the line where the construct that failed began.
		if isParserError(msg) {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if isReaderError(msg) {
		// yaml.v3 reads the whole input before it parses, and places what it cannot read at
		// the start of the file.
		if l, c, what, ok := unreadable(data); ok {
			return &Error{File: file, Line: l, Col: c, Msg: fmt.Sprintf("invalid YAML: %s (%s)", msg, what)}
		}
	}
	if strings.Contains(msg, "tab character") {
		// yaml.v3 names the line where the scalar before the tab began, which holds no tab.
		if l, c, ok := indentTab(data, line); ok {
			return &Error{File: file, Line: l, Col: c, Msg: "invalid YAML: " + msg}
		}
	}
	return &Error{File: file, Line: line, Col: firstColumn(data, line), Msg: "invalid YAML: " + msg}
}

// indentTab finds the first tab in the indentation of a line at or after the 1-based line
// from, and returns its 1-based line and column.
func indentTab(data []byte, from int) (line, col int, ok bool) {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if i+1 < from {
			continue
		}
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if j := bytes.IndexByte(indent, '\t'); j >= 0 {
			return i + 1, j + 1, true
		}
	}
	return 0, 0, false
}

// isReaderError reports whether a yaml.v3 message is one of its reader's, about bytes that are
// not UTF-8 or characters YAML does not allow.
func isReaderError(msg string) bool {
	return strings.Contains(msg, "UTF-8") || strings.HasPrefix(msg, "control characters are not allowed")
}

// unreadable finds the first byte of data that is not UTF-8, or the first character that YAML
// does not allow in a stream (its c-printable set), and returns its 1-based line and column (the
// column in characters, as yaml.v3 counts them) and what it is: "byte 0xff" or "U+0007".
func unreadable(data []byte) (line, col int, what string, ok bool) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("byte 0x%02x", data[i]), true
		case !yamlPrintable(r) && !(i == 0 && r == '\uFEFF'):
			return line, col, fmt.Sprintf("%U", r), true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return 0, 0, "", false
}

// yamlPrintable reports whether YAML allows r in a stream: tab, line feed, carriage return,
// printable ASCII, next line, and the Unicode planes without surrogates and non-characters.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7E, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// isParserError reports whether a yaml.v3 message comes from its parser rather than its scanner.
func isParserError(msg string) bool {
	for _, p := range []string{"did not find expected", "found duplicate %", "found incompatible YAML document", "found undefined tag handle"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// firstColumn returns the 1-based column of the first non-blank character of a 1-based line.
func firstColumn(data []byte, line int) int {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	trimmed := bytes.TrimLeft(l, " \t")
	if len(trimmed) == 0 {
		return 1
	}
	return len(l) - len(trimmed) + 1
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// at returns the position of a node.
func at(n *yaml.Node) pos {
	if n == nil {
		return pos{}
	}
	return pos{n.Line, n.Column}
}

// checkShape walks the whole tree once, before anything else looks at it: it bounds its size and
// depth (aliases expanded), and reports keys that are not plain scalars and keys given twice.
func checkShape(file string, root *yaml.Node) ErrorList {
	var errs ErrorList
	count := 0
	var walk func(n *yaml.Node, path string, depth int, viaAlias bool) bool
	walk = func(n *yaml.Node, path string, depth int, viaAlias bool) bool {
		count++
		if count > maxNodes || depth > maxDepth {
			return false
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return true
			}
			return walk(n.Alias, path, depth+1, true)
		}
		switch n.Kind {
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if !walk(c, indexPath(path, i), depth+1, viaAlias) {
					return false
				}
			}
		case yaml.MappingNode:
			seen := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := resolve(n.Content[i])
				if k == nil || k.Kind != yaml.ScalarNode {
					if !viaAlias {
						errs = append(errs, &Error{File: file, Line: n.Content[i].Line, Col: n.Content[i].Column, Path: path, Msg: "a key must be a plain string"})
					}
					continue
				}
				if first, ok := seen[k.Value]; ok && !viaAlias {
					errs = append(errs, &Error{File: file, Line: n.Content[i].Line, Col: n.Content[i].Column, Path: keyPath(path, k.Value),
						Msg: fmt.Sprintf("duplicate key %q (first given at line %d)", k.Value, first.Line)})
				} else if !ok {
					seen[k.Value] = n.Content[i]
				}
				if !walk(n.Content[i+1], keyPath(path, k.Value), depth+1, viaAlias) {
					return false
				}
			}
		}
		return true
	}
	if !walk(root, "", 0, false) {
		return ErrorList{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("document is too large or too deeply nested (more than %d nodes or %d levels, aliases expanded)", maxNodes, maxDepth)}}
	}
	return errs
}

// keyPath appends a mapping key to a field path.
func keyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a sequence index to a field path.
func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// nonFinite stands for a YAML .nan or .inf, which JSON cannot carry.
type nonFinite string

// scalarValue converts a scalar node to a Go value: nil, bool, int, float64, string, or nonFinite.
func scalarValue(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int
		if n.Decode(&i) == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nonFinite(n.Value)
			}
			return f
		}
	}
	return n.Value
}

// generic converts a (checked) tree into plain Go values for JSON Schema validation: maps,
// slices, and the scalars of scalarValue.
func generic(n *yaml.Node) any {
	n = resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				continue
			}
			if _, dup := m[k.Value]; dup {
				continue
			}
			m[k.Value] = generic(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = generic(c)
		}
		return s
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil
}

// describe names the kind of a node's value for error messages: "a list", "null", "16.5".
func describe(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return describeValue(scalarValue(n))
	}
	return "an unsupported YAML node"
}

// describeValue names a Go value for error messages.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		// An error message may end up in a CI log: it shows no key, and no secret inside a
		// value (HF_TOKEN=..., a URL's password).
		if redact.LooksLikeKey(v) {
			return "a string that looks like a key"
		}
		v = redact.Value("", v)
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return strconv.Quote(v)
	case nonFinite:
		return string(v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case float64:
		// 1.0 is not 1: say so, or "must be 1, not 1" would puzzle.
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
