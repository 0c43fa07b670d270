package consumer_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocGroups: every exported type and function of the package is either
// named in the package doc's "Application API" section or marked in its own
// doc as for adapter or middleware authors, so `go doc` never mixes an
// adapter-author hook in with the application API unmarked. Catches: a new
// exported hook added without saying who it is for.
func TestDocGroups(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/oncely/oncely/consumer")
	if err != nil {
		t.Fatal(err)
	}
	app := p.Doc[strings.Index(p.Doc, "Application API"):strings.Index(p.Doc, "For adapter authors")]
	named := func(name string) bool { return regexp.MustCompile(`\b` + name + `\b`).MatchString(app) }
	marked := func(d string) bool {
		return strings.Contains(d, "For adapter authors") || strings.Contains(d, "For middleware authors")
	}
	check := func(name, d string) {
		if !named(name) && !marked(d) {
			t.Errorf("%s is neither in the package doc's Application API nor marked for adapter or middleware authors", name)
		}
	}
	for _, f := range p.Funcs {
		check(f.Name, f.Doc)
	}
	for _, ty := range p.Types {
		check(ty.Name, ty.Doc)
		for _, f := range ty.Funcs { // constructors are grouped under their type
			check(f.Name, f.Doc)
		}
	}
}
