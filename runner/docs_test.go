package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = ".."

// markdownLink matches an inline Markdown link or image and captures its target.
var markdownLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode matches a code span, whose text is not Markdown.
var inlineCode = regexp.MustCompile("`[^`]*`")

// docFiles returns README.md and every Markdown file in docs/, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no Markdown files")
	}
	for _, d := range docs {
		rel, err := filepath.Rel(repoRoot, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// docLink is one link found in a Markdown file.
type docLink struct {
	line   int
	target string
}

// links returns the inline links of a Markdown text, outside fenced code blocks and code spans.
func links(text string) []docLink {
	var out []docLink
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			out = append(out, docLink{line: i + 1, target: m[1]})
		}
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a Markdown text: lower case, with
// spaces as hyphens and punctuation other than hyphens and underscores dropped, and -1, -2, ...
// appended to repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinks checks that every link between the README and the files in docs/ is relative and
// points to a file that exists, and, where it names a heading, to a heading that exists; and that
// the README links to every file in docs/, so that a reader can reach all of them from it.
func TestDocLinks(t *testing.T) {
	files := docFiles(t)
	texts := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(data)
	}
	fromReadme := map[string]bool{}
	for _, f := range files {
		for _, l := range links(texts[f]) {
			target := l.target
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if strings.HasPrefix(target, "/") || strings.Contains(target, "://") {
				t.Errorf("%s:%d: link %s is not relative", f, l.line, target)
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: link %s leaves the repository", f, l.line, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
					t.Errorf("%s:%d: link %s points to a missing file: %v", f, l.line, target, err)
					continue
				}
			}
			if f == "README.md" {
				fromReadme[dest] = true
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			text, ok := texts[dest]
			if !ok {
				data, err := os.ReadFile(filepath.Join(repoRoot, dest))
				if err != nil {
					t.Fatal(err)
				}
				text = string(data)
			}
			if !anchors(text)[anchor] {
				t.Errorf("%s:%d: link %s names a heading that %s does not have", f, l.line, target, dest)
			}
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f, "docs/") && !fromReadme[f] {
			t.Errorf("README.md does not link to %s", f)
		}
	}
}

// TestDocLinkParsing checks the link and anchor extraction that TestDocLinks relies on.
func TestDocLinkParsing(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		links   []string
		anchors []string
	}{
		{
			name:  "inline links and images",
			text:  "see [a](docs/a.md) and ![b](img.png \"title\") and [c](https://x.org/y)",
			links: []string{"docs/a.md", "img.png", "https://x.org/y"},
		},
		{
			name:  "code is not Markdown",
			text:  "`[a](nope.md)` then [b](yes.md)\n```\n[c](fenced.md)\n```\n[d](after.md)",
			links: []string{"yes.md", "after.md"},
		},
		{
			name:    "headings",
			text:    "# Result folders\n## `server`\n## Comparing runs: diff and the CI gate\n## Summaries\n## Summaries\n```\n# not a heading\n```",
			anchors: []string{"result-folders", "server", "comparing-runs-diff-and-the-ci-gate", "summaries", "summaries-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range links(tt.text) {
				got = append(got, l.target)
			}
			if !slices.Equal(got, tt.links) {
				t.Errorf("links = %q, want %q", got, tt.links)
			}
			a := anchors(tt.text)
			for _, want := range tt.anchors {
				if !a[want] {
					t.Errorf("anchors %v lack %q", a, want)
				}
			}
			if len(a) != len(tt.anchors) {
				t.Errorf("anchors = %v, want %q", a, tt.anchors)
			}
		})
	}
}
