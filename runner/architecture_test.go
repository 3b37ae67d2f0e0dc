package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the import path of this module, the prefix of every import of the project.
const modulePath = "github.com/onelayerdown/runner"

// The limits that docs/architecture.md states for the code's shape.
const (
	maxFileLines = 600
	maxFuncLines = 120
)

// longFuncs are the functions allowed over maxFuncLines, each with the reason its comment gives.
var longFuncs = map[string]bool{
	// One streamed request, read straight through: its length keeps the hot path in one frame.
	"runner/internal/measure Client.once": true,
}

// goPackage is one package of the module as its non-test files declare it.
type goPackage struct {
	dir     string          // relative to the repository root, with forward slashes
	imports map[string]bool // the project's packages it imports, by their name in the map
	comment bool            // whether a file carries a package comment
}

// packageName is how docs/architecture.md names a package: its path under runner/internal, or
// its path from the repository root for one outside it.
func packageName(dir string) string {
	if rest, ok := strings.CutPrefix(dir, "runner/internal/"); ok {
		return rest
	}
	return dir
}

// modulePackages parses the non-test Go files of every package of the main module (a folder with
// a go.mod of its own is another module and is left out), calling each file's function
// declarations to fn.
func modulePackages(t *testing.T, fn func(dir string, fset *token.FileSet, f *ast.File)) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		p := pkgs[rel]
		if p == nil {
			p = &goPackage{dir: rel, imports: map[string]bool{}}
			pkgs[rel] = p
		}
		if f.Doc != nil {
			p.comment = true
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(path, modulePath+"/"); ok {
				p.imports[packageName(rest)] = true
			}
		}
		if fn != nil {
			fn(rel, fset, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// packageRow matches a row of the package table in docs/architecture.md: the package, its job,
// and the packages of the project it imports.
var packageRow = regexp.MustCompile("^\\| `([a-z0-9/]+)` \\| .* \\| ([^|]+) \\|$")

// TestArchitecturePackageMap checks the package table of docs/architecture.md against the code:
// every package under runner/internal has a row, and each row's imports are the package's own.
func TestArchitecturePackageMap(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := modulePackages(t, nil)
	rows := map[string]bool{}
	for i, line := range strings.Split(string(doc), "\n") {
		m := packageRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		rows[name] = true
		dir := "runner/internal/" + name
		p := pkgs[dir]
		if p == nil {
			t.Errorf("docs/architecture.md:%d: package %s: no such package", i+1, dir)
			continue
		}
		var said []string
		if cell := strings.TrimSpace(m[2]); cell != "none" {
			for _, s := range strings.Split(cell, ",") {
				said = append(said, strings.Trim(strings.TrimSpace(s), "`"))
			}
		}
		var has []string
		for imp := range p.imports {
			has = append(has, imp)
		}
		slices.Sort(said)
		slices.Sort(has)
		if !slices.Equal(said, has) {
			t.Errorf("docs/architecture.md:%d: package %s imports %v, the table says %v", i+1, name, has, said)
		}
	}
	for dir := range pkgs {
		if name, ok := strings.CutPrefix(dir, "runner/internal/"); ok && !rows[name] {
			t.Errorf("docs/architecture.md: package %s has no row in the package table", name)
		}
	}
}

// TestCodeShape checks the limits docs/architecture.md states: every package has a package
// comment, no non-test file is longer than maxFileLines, and no function is longer than
// maxFuncLines except those in longFuncs.
func TestCodeShape(t *testing.T) {
	pkgs := modulePackages(t, func(dir string, fset *token.FileSet, f *ast.File) {
		file := fset.File(f.Pos())
		if n := file.LineCount(); n > maxFileLines {
			t.Errorf("%s/%s: %d lines, over the limit of %d", dir, filepath.Base(file.Name()), n, maxFileLines)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := dir + " " + funcName(fd)
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines && !longFuncs[name] {
				t.Errorf("%s: %d lines, over the limit of %d", name, n, maxFuncLines)
			}
		}
	})
	for dir, p := range pkgs {
		if !p.comment {
			t.Errorf("%s: no file carries a package comment", dir)
		}
	}
}

// funcName is a function's name as TestCodeShape reports it: Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// parts are the parts of the code as docs/architecture.md draws them, each a set of packages by
// their names in the package table ("runner" is package main).
var parts = map[string][]string{
	"face":        {"runner"},
	"orchestrate": {"orchestrate"},
	"doctor":      {"doctor"},
	"plan":        {"plan", "sched"},
	"readers":     {"summary", "compare", "decompose", "report", "export", "chart", "parquet"},
	"engine":      {"engine", "engine/enginetest"},
	"client":      {"measure", "sse", "tokens"},
	"telemetry":   {"telemetry"},
	"results":     {"results", "merge"},
	"fixtures":    {"results/resultstest"},
	"wire":        {"openai"},
	"experiment":  {"experiment", "schema"},
	"record":      {"record"},
	"facts":       {"enginefacts"},
	"kit":         {"tabular", "redact"},
	"stats":       {"stats"},
	"sim":         {"sim", "gguf"},
}

// never are the imports that must not exist, from one part to another, each with its reason
// (docs/architecture.md, "Imports that never exist"). "*" stands for every other part.
var never = []struct{ from, to, why string }{
	{"record", "*", "the domain types import nothing of the project"},
	{"wire", "client", "the protocol knows no measurement"},
	{"wire", "engine", "the protocol knows no process"},
	{"client", "results", "a measurement does not know where it is stored"},
	{"client", "engine", "a measurement does not know how the server booted"},
	{"engine", "client", "booting a server is not measuring it"},
	{"engine", "results", "the engine writes no folder; logs go to a given writer"},
	{"results", "orchestrate", "storage does not drive the run"},
	{"results", "client", "the folder contract does not depend on the client"},
	{"results", "wire", "the folder contract does not depend on the protocol"},
	{"readers", "orchestrate", "reading a folder never runs anything"},
	{"readers", "engine", "reading a folder never boots anything"},
	{"readers", "wire", "reading a folder never speaks to a server"},
	{"orchestrate", "readers", "a run does not read reports"},
	{"doctor", "readers", "checking a server reads no result folder"},
	{"doctor", "fixtures", "test fixtures never ship"},
	{"experiment", "engine", "the experiment format does not know how servers boot"},
	{"experiment", "results", "the experiment format knows no folder"},
	{"plan", "engine", "planning boots nothing"},
	{"plan", "results", "planning writes nothing"},
	{"facts", "*", "the engine table imports nothing of the runner"},
	{"kit", "*", "the shared conventions import nothing of the runner"},
	{"telemetry", "engine", "the sampler is given a process group, it does not boot one"},
	{"sim", "orchestrate", "the simulator is an engine, not a client"},
	{"sim", "client", "the simulator does not share the client's code"},
	{"sim", "wire", "the simulator's own structs check the client"},
	{"face", "fixtures", "test fixtures never ship"},
	{"orchestrate", "fixtures", "test fixtures never ship"},
	{"readers", "fixtures", "test fixtures never ship"},
}

// TestArchitectureNeverImports checks that every package belongs to one part and that no import
// runs where docs/architecture.md says none may.
func TestArchitectureNeverImports(t *testing.T) {
	partOf := map[string]string{}
	for part, names := range parts {
		for _, n := range names {
			partOf[n] = part
		}
	}
	pkgs := modulePackages(t, nil)
	for dir, p := range pkgs {
		from := partOf[packageName(dir)]
		if from == "" {
			t.Errorf("%s: in no part of the architecture; add it to parts and to docs/architecture.md", dir)
			continue
		}
		for imp := range p.imports {
			to := partOf[imp]
			for _, n := range never {
				if n.from == from && to != from && (n.to == to || n.to == "*") {
					t.Errorf("%s imports %s: %s never imports %s (%s)", dir, imp, from, to, n.why)
				}
			}
		}
	}
}
