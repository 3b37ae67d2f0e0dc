package record

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestErrorClassesComplete checks that ErrorClasses holds every ErrorClass constant declared in
// record.go, once: readers refuse a class the list lacks, so a class added without it would make
// folders with that class unreadable.
func TestErrorClassesComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "record.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []ErrorClass
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "ErrorClass" {
				continue
			}
			for _, val := range v.Values {
				s, err := strconv.Unquote(val.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, ErrorClass(s))
			}
		}
	}
	if len(declared) < 10 {
		t.Fatalf("found %d ErrorClass constants in record.go; the parse missed them", len(declared))
	}
	for _, c := range declared {
		if n := countOf(ErrorClasses, c); n != 1 {
			t.Errorf("error class %q is in ErrorClasses %d times, want once", c, n)
		}
	}
	if len(ErrorClasses) != len(declared) {
		t.Errorf("ErrorClasses has %d entries, record.go declares %d classes", len(ErrorClasses), len(declared))
	}
}

func countOf(list []ErrorClass, c ErrorClass) int {
	n := 0
	for i := range list {
		if list[i] == c {
			n++
		}
	}
	return n
}
