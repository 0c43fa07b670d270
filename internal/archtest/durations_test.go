package archtest

import (
	"go/ast"
	"go/types"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestNoDurationInLogs loads every package of the module with its types and
// reports each argument of a log/slog function or method whose type is
// time.Duration. Catches: a log line that JSON logs print as nanoseconds
// (an operator reads "retry_in":1000000000), even on a path no test runs.
func TestNoDurationInLogs(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  "../..",
	}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("loaded %d packages; want the whole module", len(pkgs))
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				fn, ok := p.TypesInfo.Uses[sel.Sel].(*types.Func)
				if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "log/slog" {
					return true
				}
				for _, a := range call.Args {
					if tv := p.TypesInfo.TypeOf(a); tv != nil && tv.String() == "time.Duration" {
						t.Errorf("%s: a time.Duration passed to slog.%s: log it with .String()", p.Fset.Position(a.Pos()), fn.Name())
					}
				}
				return true
			})
		}
	}
}
