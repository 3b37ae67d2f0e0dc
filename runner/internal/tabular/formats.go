package tabular

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Formats are the output formats of one kind of table, such as a plan or a summary, whose
// encoders are of type E: each format's name, the other names it answers to, and how to make
// its encoder over a writer. Every command with a --format flag selects its encoder through
// one, so that all of them list their formats and refuse an unknown one alike.
type Formats[E any] struct {
	list []Format[E]
}

// Format is one output format of a Formats.
type Format[E any] struct {
	Name    string            // the name help lists
	Aliases []string          // other names accepted but not listed, such as md for markdown
	New     func(io.Writer) E // the format's encoder over a writer
}

// NewFormats returns the formats in the order help lists them.
func NewFormats[E any](formats ...Format[E]) Formats[E] {
	return Formats[E]{list: formats}
}

// Names returns the names of the formats, in the order help lists them.
func (f Formats[E]) Names() []string {
	names := make([]string, len(f.list))
	for i, x := range f.list {
		names[i] = x.Name
	}
	return names
}

// New returns the encoder over w of the format called name, by its name or one of its
// aliases. An unknown name is an error that lists the formats.
func (f Formats[E]) New(name string, w io.Writer) (E, error) {
	for _, x := range f.list {
		if x.Name == name || slices.Contains(x.Aliases, name) {
			return x.New(w), nil
		}
	}
	var zero E
	return zero, fmt.Errorf("unknown format %q (want %s)", name, strings.Join(f.Names(), ", "))
}
