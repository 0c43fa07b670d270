package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// dynamicReads reports whether call, a method call through an interface
// field whose dynamic types the package shows (see dynamicFields: a port
// wired to eventstore.New(pool)), only reads: every concrete method it
// may run only reads, known from its readsOnly fact when it is declared
// in another package, from its body (see onlyReads) when it is declared
// here. A field bound to the pool is bound for its writes; a read through
// it commits and repeats nothing, as a SELECT through the pool does not.
//
// What it does not catch: a method that reads through a handle vet does
// not know (a cache, another service) is not a read, and is judged as the
// call through the field is; a field whose dynamic types are not all
// known is not a read.
func dynamicReads(pass *analysis.Pass, call *ast.CallExpr, dyn map[*types.Var][]types.Type, decls *funcDecls) bool {
	ms := dynamicMethods(pass, call, dyn)
	for _, m := range ms {
		if m.Pkg() != pass.Pkg {
			if m.Pkg() == nil || !pass.ImportObjectFact(m.Origin(), new(readsOnly)) {
				return false
			}
			continue
		}
		if decl := decls.decls[m.Origin()]; decl == nil || !onlyReads(pass, decls, decl.Body) {
			return false
		}
	}
	return len(ms) > 0
}
