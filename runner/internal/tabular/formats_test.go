package tabular

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// TestFormats checks that a format is found by its name or an alias, that only names are
// listed, and what an unknown name says.
func TestFormats(t *testing.T) {
	f := NewFormats(
		Format[string]{Name: "text", New: func(io.Writer) string { return "T" }},
		Format[string]{Name: "markdown", Aliases: []string{"md"}, New: func(io.Writer) string { return "M" }},
	)
	if got, want := f.Names(), []string{"text", "markdown"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	for name, want := range map[string]string{"text": "T", "markdown": "M", "md": "M"} {
		if got, err := f.New(name, &bytes.Buffer{}); err != nil || got != want {
			t.Errorf("New(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	_, err := f.New("xml", &bytes.Buffer{})
	if want := `unknown format "xml" (want text, markdown)`; err == nil || err.Error() != want {
		t.Errorf("New(xml) error = %v, want %s", err, want)
	}
}
