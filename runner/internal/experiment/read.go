package experiment

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// ReadFile reads and parses an experiment file; see Parse. It reads at most one byte more than
// the size limit, so that a path to an endless device or a file still growing cannot fill
// memory, and refuses anything but a regular file before opening it: opening a named pipe would
// wait for a writer that may never come.
func ReadFile(path string) (*Experiment, error) {
	info, err := os.Stat(path)
	if err != nil {
		// What cannot be stat'ed cannot be opened, and open names the failure as users know
		// it: "open x.yaml: no such file or directory".
		if f, oerr := os.Open(path); oerr != nil {
			err = oerr
		} else {
			f.Close()
		}
		return nil, fmt.Errorf("read experiment: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s); an experiment file must be a regular YAML file", path, tabular.FileKind(info.Mode()))
	}
	if info.Size() > maxFileSize {
		return nil, tooLarge(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read experiment: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read experiment %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		// The file grew between the check of its size and the read.
		return nil, tooLarge(path)
	}
	return Parse(path, data)
}

// tooLarge is the error for a file over the size limit.
func tooLarge(path string) error {
	return fmt.Errorf("%s: file is larger than the limit of %s; an experiment file is a few kilobytes", path, sizeLimit)
}

// sizeLimit is the size limit as the errors print it.
var sizeLimit = fmt.Sprintf("1 MiB (%d bytes)", maxFileSize)

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
