// Package redact is the one rule that decides which values are secrets (keys, tokens, passwords,
// URL credentials) and hides them wherever the runner shows or records text: command lines,
// environments, server logs, error messages and the result folder.
package redact

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Marker replaces a secret value.
const Marker = "REDACTED"

// minReplace is the shortest secret that is also hidden wherever else it appears in text. A
// shorter one would blank out ordinary words; it is still hidden at its own place (the value of
// --api-key, of HF_TOKEN=...).
const minReplace = 4

// secretWords are the name parts that mark a flag, variable, header or query parameter as
// secret. Names are split on '-', '_' and '.', so --max-num-batched-tokens (part "tokens") and
// TOKENIZERS_PARALLELISM (part "tokenizers") are kept while --hf-token and OPENAI_API_KEY are
// redacted.
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "secrets": true,
	"password": true, "passwd": true, "pass": true, "pwd": true,
	"credential": true, "credentials": true, "auth": true, "authorization": true,
	"cookie": true, "sig": true, "signature": true,
}

// authSchemes are the schemes of an Authorization header, kept when its credentials are hidden.
var authSchemes = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true}

// IsSecretName reports whether a flag, variable, header or query parameter name names a
// secret: its last word is a secret word (HF_TOKEN, --api-key, X-Api-Key), unless it follows
// "per", which makes it a rate (--decode-per-token 5ms). A secret word earlier in the name
// qualifies something else: --api-key-file and --ssl-key-file hold paths, and vLLM's
// return_tokens_as_token_ids and allowed_token_ids are request options.
func IsSecretName(name string) bool {
	name = strings.TrimLeft(strings.ToLower(name), "-")
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(words) == 0 {
		return false
	}
	last := len(words) - 1
	return secretWords[words[last]] && (last == 0 || words[last-1] != "per")
}

// takesValue reports whether the argument after a secret flag is its value: not another flag.
func takesValue(next string) bool { return !strings.HasPrefix(next, "-") }

// ArgSecrets returns the secret values in a command line: the value of a secret flag
// (--api-key X, --api-key=X), of a secret NAME=VALUE word (HF_TOKEN=X) and of a secret header
// (X-Api-Key: X, Authorization: Bearer X), the word after "Bearer", and the credentials and
// secret query parameters of a URL (http://user:pw@host, ?token=X).
func ArgSecrets(argv []string) []string {
	var out []string
	for i, a := range argv {
		out = append(out, wordSecrets(a)...)
		if strings.ContainsAny(a, " \t\n") {
			// A whole command line in one argument (sh -c "vllm serve m --api-key X").
			out = append(out, ArgSecrets(strings.Fields(a))...)
		}
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && IsSecretName(a) && i+1 < len(argv) &&
			takesValue(argv[i+1]) {
			out = append(out, argv[i+1])
		}
		if strings.EqualFold(a, "bearer") && i+1 < len(argv) {
			out = append(out, argv[i+1])
		}
	}
	return out
}

// wordSecrets returns the secret parts of one word of a command line or one value.
func wordSecrets(a string) []string {
	var out []string
	for _, sp := range wordSpans(a) {
		out = append(out, a[sp[0]:sp[1]])
	}
	return out
}

// redactWord returns one word with its secret parts (see wordSpans) replaced by Marker.
func redactWord(a string) string {
	spans := wordSpans(a)
	// Replace from the end, so that earlier spans keep their offsets; spans that overlap one
	// already replaced are skipped.
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] > spans[j][0] })
	limit := len(a)
	for _, sp := range spans {
		if sp[1] > limit {
			continue
		}
		a = a[:sp[0]] + Marker + a[sp[1]:]
		limit = sp[0]
	}
	return a
}

// wordSpans returns where the secrets of one word are, as byte ranges: the value of a secret
// NAME=VALUE, the credentials of a secret header (NAME: [scheme] VALUE), the word after
// "Bearer ", and the credentials of the URLs in it.
func wordSpans(a string) [][2]int {
	if name, val, ok := strings.Cut(a, "="); ok && val != "" && !strings.ContainsAny(name, " :/?&") && IsSecretName(name) {
		return [][2]int{{len(name) + 1, len(a)}}
	}
	if name, val, ok := strings.Cut(a, ":"); ok && !strings.ContainsAny(name, " /=") && IsSecretName(name) {
		start := len(name) + 1
		start += len(val) - len(strings.TrimLeft(val, " \t"))
		val = strings.TrimSpace(val)
		// Authorization: Bearer X keeps its scheme, which is no secret.
		if scheme, cred, ok := strings.Cut(val, " "); ok && authSchemes[strings.ToLower(scheme)] {
			start += len(scheme) + 1 + len(cred) - len(strings.TrimLeft(cred, " "))
		}
		if val != "" && !strings.HasPrefix(val, "//") && start < len(strings.TrimRight(a, " \t")) {
			return [][2]int{{start, len(strings.TrimRight(a, " \t"))}}
		}
	}
	var out [][2]int
	if i := indexFoldASCII(a, "bearer "); i >= 0 {
		start := i + len("bearer ")
		for start < len(a) && a[start] == ' ' {
			start++
		}
		end := start
		for end < len(a) && a[end] != ' ' {
			end++
		}
		if end > start {
			out = append(out, [2]int{start, end})
		}
	}
	if !strings.Contains(a, "://") {
		// A path with a query, /health?token=X, carries its secrets as a URL does.
		if q := strings.IndexByte(a, '?'); q >= 0 {
			out = append(out, querySpans(a, q+1)...)
		}
	}
	return append(out, urlSpans(a)...)
}

// indexFoldASCII returns the byte offset in s of the first match of lower, a lower-case ASCII
// word, ignoring the case of ASCII letters only, or -1. It searches the original bytes because an
// offset found in strings.ToLower(s) may not be an offset in s: folding changes the length of
// invalid bytes (each becomes a three-byte U+FFFD) and of some letters (Ⱥ grows by a byte, the
// Kelvin sign shrinks by two), so a cut made there would leak part of a secret and break UTF-8.
func indexFoldASCII(s, lower string) int {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for j < len(lower) && asciiLower(s[i+j]) == lower[j] {
			j++
		}
		if j == len(lower) {
			return i
		}
	}
	return -1
}

// asciiLower returns c in lower case when it is an ASCII capital, else c unchanged.
func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// querySpans returns where the values of secret parameters are in the query that starts at
// byte start of s and runs to a '#', a space or the end.
func querySpans(s string, start int) [][2]int {
	end := start
	for end < len(s) && !strings.ContainsRune(" \t\r\n\"'<>`#", rune(s[end])) {
		end++
	}
	var out [][2]int
	pos := start
	for _, kv := range strings.Split(s[start:end], "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && IsSecretName(k) {
			out = append(out, [2]int{pos + len(k) + 1, pos + len(kv)})
		}
		pos += len(kv) + 1
	}
	return out
}

// URLSecrets returns the credentials of every URL in s, as they are written: the password of
// user:password@host (or the user, when it stands alone, as a token does: https://TOKEN@host),
// and the values of query parameters with secret names (?token=X, ?api_key=X).
func URLSecrets(s string) []string {
	var out []string
	for _, sp := range urlSpans(s) {
		out = append(out, s[sp[0]:sp[1]])
	}
	return out
}

// urlSpans returns where the credentials of the URLs in s are (see URLSecrets), as byte ranges.
func urlSpans(s string) [][2]int {
	var out [][2]int
	off := 0
	for {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			return out
		}
		begin := off + i + 3
		end := begin
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'<>`", rune(s[end])) {
			end++
		}
		off = end
		u := s[begin:end]
		authority := u
		if j := strings.IndexAny(u, "/?#"); j >= 0 {
			authority = u[:j]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			user, pw, hasPW := strings.Cut(authority[:at], ":")
			switch {
			case hasPW && pw != "":
				out = append(out, [2]int{begin + len(user) + 1, begin + at})
			case !hasPW && user != "":
				out = append(out, [2]int{begin, begin + at})
			}
		}
		if q := strings.Index(u, "?"); q >= len(authority) {
			out = append(out, querySpans(s[:end], begin+q+1)...)
		}
	}
}

// EnvSecrets returns the secret values of an environment: the whole value of a variable with a
// secret name, and the secrets inside any other value (a proxy URL with a password, a command
// line with --api-key).
func EnvSecrets(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, valueSecrets(k, v)...)
	}
	return out
}

func valueSecrets(name, v string) []string {
	if v == "" {
		return nil
	}
	if IsSecretName(name) {
		return []string{v}
	}
	return ArgSecrets(strings.Fields(v))
}

// Args returns a copy of a command line with its secrets (see ArgSecrets) replaced by Marker,
// each where it stands and, when it is at least four bytes long, wherever else it appears.
func Args(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && IsSecretName(a) && i+1 < len(argv) &&
			takesValue(argv[i+1]) {
			out[i+1] = Marker
		}
		if strings.EqualFold(a, "bearer") && i+1 < len(argv) {
			out[i+1] = Marker
		}
		if out[i] == Marker {
			continue
		}
		out[i] = redactWord(a)
		if strings.ContainsAny(a, " \t\n") {
			// A whole command line in one argument (sh -c "srv --api-key X") has its flags'
			// values hidden where they stand too, as ArgSecrets finds them: the Replacer below
			// would keep a short one, or a number, which is still the flag's secret.
			out[i] = fieldsArgs(out[i])
		}
	}
	return New(ArgSecrets(argv)...).Strings(out)
}

// fieldsArgs returns line with its whitespace-separated words redacted as Args redacts a
// command line, keeping the whitespace between them.
func fieldsArgs(line string) string {
	words := strings.Fields(line)
	red := Args(words)
	var b strings.Builder
	rest := line
	for i, w := range words {
		j := strings.Index(rest, w)
		b.WriteString(rest[:j])
		b.WriteString(red[i])
		rest = rest[j+len(w):]
	}
	b.WriteString(rest)
	return b.String()
}

// Env returns a copy of an environment whose secret values are replaced by Marker: the whole
// value of a variable with a secret name, the secret parts of any other.
func Env(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretName(k) && v != "" {
			out[k] = Marker
			continue
		}
		out[k] = Value(k, v)
	}
	return out
}

// Value returns the value of a variable or field named name with its secrets replaced by
// Marker: all of it when the name is secret, else its secret parts.
func Value(name, v string) string {
	if IsSecretName(name) && v != "" {
		return Marker
	}
	return fieldsArgs(v)
}

// byLength returns the distinct non-empty values of ss, longest first, so that a secret that
// contains another is hidden whole.
func byLength(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && s != Marker && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Replacer hides a set of secret values wherever they appear in text. The zero value and a nil
// *Replacer hide nothing.
type Replacer struct {
	secrets []string // longest first
}

// New returns a Replacer of the given secrets. Values shorter than four bytes are left out:
// they would blank out ordinary text; so are booleans and numbers, which are no keys and would
// blank out every true or 8000 in a log.
func New(secrets ...string) *Replacer {
	r := &Replacer{}
	for _, s := range byLength(secrets) {
		if len(s) >= minReplace && !plainValue(s) {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

// plainValue reports whether s is a boolean or a number.
func plainValue(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "null":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// Writer returns a writer that hides the secrets in what is written to w, one Write at a time:
// a secret split across two writes is not seen, so write whole lines.
func (r *Replacer) Writer(w io.Writer) io.Writer {
	if r.Empty() {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		if _, err := w.Write(r.Bytes(p)); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// String returns s with every secret replaced by Marker.
func (r *Replacer) String(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Marker)
		}
	}
	return s
}

// Bytes returns b with every secret replaced by Marker, in a new slice when it replaced any.
func (r *Replacer) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, sec := range r.secrets {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(Marker))
		}
	}
	return b
}

// Strings returns a copy of ss with every secret replaced by Marker.
func (r *Replacer) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.String(s)
	}
	return out
}

// Empty reports whether the Replacer hides nothing.
func (r *Replacer) Empty() bool { return r == nil || len(r.secrets) == 0 }

// keyPrefixes start the keys and tokens of well-known services.
var keyPrefixes = []string{"sk-", "sk_", "pk_", "rk_", "hf_", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_",
	"glpat-", "xoxb-", "xoxp-", "nvapi-", "gsk_", "AKIA", "AIza"}

// LooksLikeKey reports whether s looks like a key or token rather than the name of something:
// it starts with a prefix that services give their keys (sk-, hf_, ghp_, ...), or it is long
// and mixes upper case, lower case and digits as generated keys do.
func LooksLikeKey(s string) bool {
	for _, p := range keyPrefixes {
		if strings.HasPrefix(s, p) && len(s) > len(p)+8 {
			return true
		}
	}
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return len(s) >= 24 && upper && lower && digit
}

// Tree returns a copy of a decoded JSON or YAML value (maps, lists, scalars) whose secrets are
// replaced by Marker: every non-empty scalar under a key with a secret name, however deep, and the secret
// parts of every other string (see Value). name is the key v was found under, or "".
func Tree(name string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			// Everything under a secret key is secret, whatever its own key.
			if IsSecretName(name) {
				out[k] = Tree(name, e)
			} else {
				out[k] = Tree(k, e)
			}
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Tree(name, e)
		}
		return out
	case string:
		return Value(name, x)
	case bool, nil:
		// A boolean is no secret (return_token_ids: true), and keeps the request what it was.
		return v
	}
	if IsSecretName(name) {
		return Marker // a number under a secret name: a numeric token or PIN
	}
	return v
}

// TreeSecrets returns the secret values in a decoded JSON or YAML value, as Tree finds them.
func TreeSecrets(name string, v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if IsSecretName(name) {
				out = append(out, TreeSecrets(name, e)...)
			} else {
				out = append(out, TreeSecrets(k, e)...)
			}
		}
	case []any:
		for _, e := range x {
			out = append(out, TreeSecrets(name, e)...)
		}
	case string:
		out = append(out, valueSecrets(name, x)...)
	}
	return out
}
