package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// claimedHandlers returns the functions of the package that run as the
// handler h given to consumer.New or consumer.Chain behind the Postgres
// claim (see txHandlers), as *ast.FuncDecl or *ast.FuncLit:
//
//   - the Handle and HandleBatch methods of h's static type that the
//     package declares;
//   - the function converted to a handler type of another package
//     (consumer.HandlerFunc(topUp), consumer.HandlerFunc(func(…) {…}));
//   - for a local variable, every value the package assigns it (var h
//     consumer.Handler = &handler{…}), looked into the same way.
func claimedHandlers(pass *analysis.Pass, decls *funcDecls, h ast.Expr) []ast.Node {
	var out []ast.Node
	seen := map[*types.Var]bool{}
	var visit func(e ast.Expr)
	visit = func(e ast.Expr) {
		e = ast.Unparen(e)
		if call, ok := e.(*ast.CallExpr); ok && pass.TypesInfo.Types[call.Fun].IsType() && len(call.Args) == 1 {
			switch f := ast.Unparen(call.Args[0]).(type) {
			case *ast.FuncLit:
				out = append(out, f)
				return
			default:
				if fn := funcOf(pass, f); fn != nil {
					if decl := decls.decls[fn.Origin()]; decl != nil {
						out = append(out, decl)
						return
					}
				}
			}
		}
		if id, ok := e.(*ast.Ident); ok {
			if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && types.IsInterface(v.Type()) && !seen[v] {
				seen[v] = true
				eachVarAssignment(pass, func(lhs *ast.Ident, value ast.Expr) {
					if pass.TypesInfo.ObjectOf(lhs) == v {
						visit(value)
					}
				})
				return
			}
		}
		for _, m := range handleMethods(pass, decls, e) {
			out = append(out, m)
		}
	}
	visit(h)
	return out
}
