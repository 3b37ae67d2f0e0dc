package experiment

import (
	"fmt"
	"os"
	"strings"
)

// ReadFile reads and parses an experiment file; see Parse.
func ReadFile(path string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read experiment: %w", err)
	}
	return Parse(path, data)
}

// Parse reads an experiment file's bytes, checks them against the JSON Schema and the rules a
// schema cannot express, and expands the matrix once to check every config. path names the file
// in errors. On failure the error is an ErrorList holding every problem found, each located at
// file:line:column; a syntax error stops the parse and is reported alone.
func Parse(path string, data []byte) (*Experiment, error) {
	root, perr := parseYAML(path, data)
	if perr != nil {
		return nil, ErrorList{perr}
	}
	errs := checkShape(path, root)
	if len(errs) == 1 && errs[0].Path == "" && strings.HasPrefix(errs[0].Msg, "document is too large") {
		return nil, errs
	}
	d := &decoder{file: path, pos: map[string]pos{}}
	e := d.decode(root)
	errs = append(errs, merge(d.errs, schemaErrors(path, root))...)
	e.Path, e.Source, e.pos = path, data, d.pos
	// The matrix is expanded only when what it is built from is sound (an unknown key leaves
	// the rest sound); otherwise its checks would repeat the problems already found in other
	// words.
	var blocking ErrorList
	for _, e := range errs {
		if !d.unknown[e] {
			blocking = append(blocking, e)
		}
	}
	if !touches(blocking, "server", "request", "matrix", "repetitions", "warmup", "cache", "timeouts") {
		if _, err := e.Expand(); err != nil {
			errs = append(errs, err.(ErrorList)...)
		}
	}
	if len(errs) > 0 {
		return nil, errs.sort()
	}
	return e, nil
}

// touches reports whether any error is about one of the sections, or about the whole file.
func touches(errs ErrorList, sections ...string) bool {
	for _, e := range errs {
		if e.Path == "" {
			return true
		}
		for _, s := range sections {
			if within(e.Path, s) {
				return true
			}
		}
	}
	return false
}
