package experiment

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/onelayerdown/runner/runner/internal/redact"
)

// RedactedSource returns the experiment file's bytes with every secret it holds replaced by
// redact.Marker, and the paths of the fields that held one (server.args[3], server.env.HF_TOKEN,
// request.extra.api_key). The secrets are those the runner redacts everywhere else (see package
// redact): the values of secret flags in server.args and server.command, of server.env
// variables with secret names, of secret-named keys in request.extra, and URL credentials in
// any of them. Each secret is replaced where it is written, so the rest of the file stays byte
// for byte as it was; a secret written in a way that cannot be replaced in place (escaped, in a
// block scalar) makes the whole file re-encoded from its parsed form instead. A file without
// secrets is returned as it is, with no fields.
func (e *Experiment) RedactedSource() ([]byte, []string) {
	root, perr := parseYAML(e.Path, e.Source)
	if perr != nil {
		return e.Source, nil
	}
	found := secretScalars(root)
	if len(found) == 0 {
		return e.Source, nil
	}
	var fields, secrets []string
	for _, s := range found {
		fields = append(fields, s.path)
		secrets = append(secrets, s.secrets...)
	}
	if out, ok := spliceSecrets(e.Source, found, secrets); ok {
		return out, fields
	}
	// Re-encode the tree with the redacted values: formatting changes, the content does not.
	for _, s := range found {
		s.node.Value = s.redacted
		s.node.Style = yaml.DoubleQuotedStyle
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return []byte("# the experiment file held secrets and could not be re-encoded without them\n"), fields
	}
	enc.Close()
	return redact.New(secrets...).Bytes(b.Bytes()), fields
}

// secretScalar is a scalar of the file that holds a secret.
type secretScalar struct {
	path     string
	node     *yaml.Node
	redacted string   // its value with the secrets replaced
	secrets  []string // the secret values it holds
}

// secretScalars finds the scalars of the file that hold secrets.
func secretScalars(root *yaml.Node) []secretScalar {
	var out []secretScalar
	add := func(path string, n *yaml.Node, red string, secrets []string) {
		if n.Value == red {
			return
		}
		out = append(out, secretScalar{path: path, node: n, redacted: red, secrets: secrets})
	}
	server := child(root, "server")
	for _, key := range []string{"args", "command"} {
		list := child(server, key)
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		var words []string
		var nodes []*yaml.Node
		for _, c := range list.Content {
			if c = resolve(c); c != nil && c.Kind == yaml.ScalarNode {
				words = append(words, c.Value)
				nodes = append(nodes, c)
			}
		}
		red, secrets := redact.Args(words), redact.ArgSecrets(words)
		for i, n := range nodes {
			add(indexPath("server."+key, i), n, red[i], secrets)
		}
	}
	if env := child(server, "env"); env != nil && env.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(env.Content); i += 2 {
			k, v := env.Content[i], resolve(env.Content[i+1])
			if v != nil && v.Kind == yaml.ScalarNode {
				add("server.env."+k.Value, v, redact.Value(k.Value, v.Value),
					redact.EnvSecrets(map[string]string{k.Value: v.Value}))
			}
		}
	}
	var walk func(path, name string, n *yaml.Node, secret bool)
	walk = func(path, name string, n *yaml.Node, secret bool) {
		n = resolve(n)
		if n == nil {
			return
		}
		secret = secret || redact.IsSecretName(name)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				walk(path+"."+k, k, n.Content[i+1], secret)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(indexPath(path, i), name, c, secret)
			}
		case yaml.ScalarNode:
			if secret && n.Tag != "!!null" && n.Value != "" {
				add(path, n, redact.Marker, []string{n.Value})
			} else if !secret {
				add(path, n, redact.Value(name, n.Value), redact.ArgSecrets(strings.Fields(n.Value)))
			}
		}
	}
	if extra := child(child(root, "request"), "extra"); extra != nil {
		walk("request.extra", "", extra, false)
	}
	return out
}

// child returns the value of key in a mapping node, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

// spliceSecrets replaces each secret scalar where it is written in src, and then any other
// occurrence of a secret (in a comment, say). It reports false when a scalar is not written
// as its plain value, or the result still reads as holding a secret.
func spliceSecrets(src []byte, found []secretScalar, secrets []string) ([]byte, bool) {
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for _, s := range found {
		n := s.node
		off, ok := offset(src, n.Line, n.Column)
		if !ok {
			return nil, false
		}
		switch n.Style {
		case 0:
		case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
			if off >= len(src) || src[off] != `"'`[boolIndex(n.Style == yaml.SingleQuotedStyle)] {
				return nil, false
			}
			off++
		default:
			return nil, false
		}
		if !bytes.HasPrefix(src[off:], []byte(n.Value)) {
			return nil, false
		}
		edits = append(edits, edit{off, off + len(n.Value), s.redacted})
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(src)
	limit := len(out)
	for _, e := range edits {
		if e.end > limit {
			return nil, false // two scalars at one place: an alias
		}
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
		limit = e.start
	}
	out = redact.New(secrets...).Bytes(out)
	// The result must read back with no secret left in it: redacting it again changes nothing.
	root, perr := parseYAML("", out)
	if perr != nil || len(secretScalars(root)) > 0 {
		return nil, false
	}
	return out, true
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// offset returns the byte offset of a 1-based line and column (in characters) in src.
func offset(src []byte, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for c := 1; c < col; c++ {
		if off >= len(src) || src[off] == '\n' {
			return 0, false
		}
		_, w := utf8.DecodeRune(src[off:])
		off += w
	}
	return off, true
}
