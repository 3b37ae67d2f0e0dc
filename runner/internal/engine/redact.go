package engine

import (
	"regexp"
	"sort"
	"strings"
)

// redacted replaces a secret wherever the runner shows text.
const redacted = "[redacted]"

// secretName matches environment variable names whose values are treated as secrets.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|credential|auth)`)

// secretFlags are command-line flags whose value is a secret.
var secretFlags = map[string]bool{
	"--api-key":  true,
	"--hf-token": true,
	"--token":    true,
}

// redactor hides a set of secret values in text.
type redactor struct {
	secrets []string // longest first, so that a secret containing another is hidden whole
}

func newRedactor(secrets ...string) *redactor {
	seen := map[string]bool{}
	r := &redactor{}
	for _, s := range secrets {
		// A very short value would blank out ordinary text; such a value is no secret anyway.
		if len(s) < 4 || seen[s] {
			continue
		}
		seen[s] = true
		r.secrets = append(r.secrets, s)
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// String returns s with every secret replaced.
func (r *redactor) String(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

// Strings returns a copy of ss with every secret replaced.
func (r *redactor) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.String(s)
	}
	return out
}

// argvSecrets returns the values of secret flags in argv (--api-key X, --api-key=X).
func argvSecrets(argv []string) []string {
	var out []string
	for i, a := range argv {
		name, val, hasVal := strings.Cut(a, "=")
		if !secretFlags[name] {
			continue
		}
		if hasVal {
			out = append(out, val)
		} else if i+1 < len(argv) {
			out = append(out, argv[i+1])
		}
	}
	return out
}

// envSecrets returns the values of the variables in env whose names look secret.
func envSecrets(env map[string]string) []string {
	var out []string
	for k, v := range env {
		if secretName.MatchString(k) {
			out = append(out, v)
		}
	}
	return out
}
