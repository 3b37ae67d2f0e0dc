package experiment

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in an experiment file, located at the YAML node that caused it.
type Error struct {
	File string // the file as named by the caller
	Line int    // 1-based; 0 when the position is not known
	Col  int    // 1-based; 0 when the position is not known
	Path string // the field path, e.g. request.max_tokens or matrix.include[0].server.dtype
	Msg  string // what is wrong, lowercase, without the location
}

// Error formats the problem as file:line:col: path: message, leaving out the parts it does not
// know.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, "%d:", e.Col)
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one experiment file, in file order. Parse and Expand (and
// ReadFile, once the file is read) return it as their error so that a caller sees all problems
// at once.
type ErrorList []*Error

// Error prints one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders the list by position, then path and message, and drops exact repeats, so that the
// same file always gives the same report.
func (l ErrorList) sort() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// pos is a position in the experiment file.
type pos struct {
	Line, Col int
}
