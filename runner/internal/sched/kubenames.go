package sched

import (
	"fmt"
	"regexp"
	"strings"
)

// The name rules below are the API server's for the names, keys and values an export sets. They
// answer in the API server's own words, so that a refused flag reads as the API server would
// refuse it; the tests of the k8scheck module hold them to the official validation functions on
// a table of inputs.

// dns1123LabelMaxLength is the longest a DNS (RFC 1123) label may be, and so a Job's name: it
// is also the value of the job-name label.
const dns1123LabelMaxLength = 63

// dns1123SubdomainMaxLength is the longest a DNS (RFC 1123) subdomain may be, and so most
// object names and a ConfigMap's keys.
const dns1123SubdomainMaxLength = 253

// labelMaxLength is the longest a label value, or the name part of a label key, may be.
const labelMaxLength = 63

// The patterns of the rules, quoted in their messages.
const (
	labelPattern     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	subdomainPattern = labelPattern + "(\\." + labelPattern + ")*"
	keyNamePattern   = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelValPattern  = "(" + keyNamePattern + ")?"
	configKeyPattern = "[-._a-zA-Z0-9]+"
)

var (
	labelRE     = regexp.MustCompile("^" + labelPattern + "$")
	subdomainRE = regexp.MustCompile("^" + subdomainPattern + "$")
	keyNameRE   = regexp.MustCompile("^" + keyNamePattern + "$")
	labelValRE  = regexp.MustCompile("^" + labelValPattern + "$")
	configKeyRE = regexp.MustCompile("^" + configKeyPattern + "$")
)

// The rules' messages, without the examples and pattern that follow them.
const (
	labelMsg     = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	subdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	keyNameMsg   = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValMsg  = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	configKeyMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
)

// patternProblem returns msg followed by examples of valid values and the pattern they match,
// as the API server words a value that does not match.
func patternProblem(msg, pattern string, examples ...string) string {
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(" (e.g. ")
	for i, e := range examples {
		if i > 0 {
			// The API server's wording has a comma after every example, this one's too.
			b.WriteString(" or ")
		}
		b.WriteString("'" + e + "', ")
	}
	b.WriteString("regex used for validation is '" + pattern + "')")
	return b.String()
}

// tooLong returns the problem of a value longer than max; unit is "characters" or "bytes", as
// the API server happens to say for each rule (it counts bytes in both).
func tooLong(max int, unit string) string {
	return fmt.Sprintf("must be no more than %d %s", max, unit)
}

// DNSLabelProblems returns the problems of a DNS (RFC 1123) label, as the name of a Job, a
// namespace, a container or a volume; none when it is valid.
func DNSLabelProblems(s string) []string {
	var p []string
	if len(s) > dns1123LabelMaxLength {
		p = append(p, tooLong(dns1123LabelMaxLength, "characters"))
	}
	switch {
	case labelRE.MatchString(s):
	case subdomainRE.MatchString(s):
		// A valid subdomain that is no label holds a dot.
		p = append(p, "must not contain dots")
	default:
		p = append(p, patternProblem(labelMsg, labelPattern, "my-name", "123-abc"))
	}
	return p
}

// DNSSubdomainProblems returns the problems of a DNS (RFC 1123) subdomain, as the name of a
// ConfigMap or a PersistentVolumeClaim; none when it is valid.
func DNSSubdomainProblems(s string) []string {
	return subdomainProblems(s, "characters")
}

// subdomainProblems returns the problems of a DNS (RFC 1123) subdomain, saying unit of its
// length.
func subdomainProblems(s, unit string) []string {
	var p []string
	if len(s) > dns1123SubdomainMaxLength {
		p = append(p, tooLong(dns1123SubdomainMaxLength, unit))
	}
	if !subdomainRE.MatchString(s) {
		p = append(p, patternProblem(subdomainMsg, subdomainPattern, "example.com"))
	}
	return p
}

// QualifiedNameProblems returns the problems of a qualified name: a label key, a node selector's
// key or an extended resource's name, NAME or PREFIX/NAME with PREFIX a DNS subdomain; none when
// it is valid.
func QualifiedNameProblems(s string) []string {
	var p []string
	parts := strings.Split(s, "/")
	if len(parts) > 2 {
		return []string{"a valid label key " + patternProblem(keyNameMsg, keyNamePattern, "MyName", "my.name", "123-abc") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
	}
	name := parts[len(parts)-1]
	if len(parts) == 2 {
		prefix := parts[0]
		if prefix == "" {
			p = append(p, "prefix part must be non-empty")
		} else {
			for _, e := range subdomainProblems(prefix, "bytes") {
				p = append(p, "prefix part "+e)
			}
		}
	}
	if name == "" {
		p = append(p, "name part must be non-empty")
	} else if len(name) > labelMaxLength {
		p = append(p, "name part "+tooLong(labelMaxLength, "bytes"))
	}
	if !keyNameRE.MatchString(name) {
		p = append(p, "name part "+patternProblem(keyNameMsg, keyNamePattern, "MyName", "my.name", "123-abc"))
	}
	return p
}

// LabelValueProblems returns the problems of a label's value, empty or a qualified name's name
// part; none when it is valid.
func LabelValueProblems(s string) []string {
	var p []string
	if len(s) > labelMaxLength {
		p = append(p, tooLong(labelMaxLength, "bytes"))
	}
	if !labelValRE.MatchString(s) {
		p = append(p, patternProblem(labelValMsg, labelValPattern, "MyValue", "my_value", "12345"))
	}
	return p
}

// ConfigMapKeyProblems returns the problems of a key of a ConfigMap's data, the experiment
// file's name; none when it is valid. A key is also the file's name in the mounted folder, hence
// the refusal of "." and "..".
func ConfigMapKeyProblems(s string) []string {
	var p []string
	if len(s) > dns1123SubdomainMaxLength {
		p = append(p, tooLong(dns1123SubdomainMaxLength, "characters"))
	}
	if !configKeyRE.MatchString(s) {
		p = append(p, patternProblem(configKeyMsg, configKeyPattern, "key.name", "KEY_NAME", "key-name"))
	}
	switch {
	case s == ".":
		p = append(p, "must not be '.'")
	case s == "..":
		p = append(p, "must not be '..'")
	case strings.HasPrefix(s, ".."):
		p = append(p, "must not start with '..'")
	}
	return p
}
