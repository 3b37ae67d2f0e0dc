package results

import (
	"net/url"
	"strings"
)

// Redacted replaces a secret in a recorded command line or environment.
const Redacted = "REDACTED"

// secretWords are the name parts that mark a flag or variable as secret. Names are split on
// '-', '_' and '.', so --max-num-batched-tokens (part "tokens") is kept while --hf-token and
// OPENAI_API_KEY are redacted.
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"pass": true, "credential": true, "credentials": true, "auth": true, "authorization": true,
}

// IsSecretName reports whether a flag or variable name names a secret: one of its words is a
// secret word, unless it follows "per", which makes it a rate (--decode-per-token 5ms).
func IsSecretName(name string) bool {
	name = strings.TrimLeft(strings.ToLower(name), "-")
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	for i, w := range words {
		if secretWords[w] && (i == 0 || words[i-1] != "per") {
			return true
		}
	}
	return false
}

// RedactArgs returns a copy of a command line with secrets replaced by Redacted: the value of a
// secret flag (--api-key X, --api-key=X), the value of a secret NAME=VALUE word (HF_TOKEN=X),
// the password of a URL (http://user:pw@host), and the word after "Bearer".
func RedactArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		out[i] = redactWord(a)
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && IsSecretName(a) && i+1 < len(argv) &&
			!strings.HasPrefix(argv[i+1], "--") {
			i++
			out[i] = Redacted
		}
		if strings.EqualFold(a, "bearer") && i+1 < len(argv) {
			i++
			out[i] = Redacted
		}
	}
	return out
}

// redactWord redacts the secret part of one word of a command line, if it has one.
func redactWord(a string) string {
	if name, _, ok := strings.Cut(a, "="); ok && IsSecretName(name) {
		return name + "=" + Redacted
	}
	if i := strings.Index(strings.ToLower(a), "bearer "); i >= 0 {
		return a[:i+len("bearer ")] + Redacted
	}
	if strings.Contains(a, "://") && strings.Contains(a, "@") {
		if u, err := url.Parse(a); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), Redacted)
				return u.String()
			}
		}
	}
	return a
}

// RedactEnv returns a copy of an environment map whose secret values are replaced by Redacted.
func RedactEnv(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretName(k) {
			v = Redacted
		} else {
			v = redactWord(v)
		}
		out[k] = v
	}
	return out
}
