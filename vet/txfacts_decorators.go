package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// decorates is TxEscape's fact about an exported function that returns a
// decorator (logrepo.Wrap(next, log) returning a VehicleRepository): its
// result is a struct of the package implementing the interface it returns,
// which holds parameter Param, of that same interface, in a field — the
// implementation every method of the decorator hands the call on to. A
// call through a field holding the decorator runs the wrapped value's
// method: a repository built on the pool, wrapped in logging or metrics,
// still writes through the pool.
//
// What it does not catch: a decorator whose methods do not hand the call
// on (a cache answering from memory is taken as running the wrapped
// method too, which only matters for the wrapped one's writes), one built
// by a function returning its concrete type (seen as that type), and one
// whose struct is filled after the literal (d.next = next).
type decorates struct{ Param int }

// AFact marks decorates as an analysis fact.
func (*decorates) AFact() {}

func (f *decorates) String() string { return "decorates" }

// exportDecorators exports decorates for the package's exported functions
// whose every return gives a decorator of one of their parameters.
func exportDecorators(pass *analysis.Pass, decls *funcDecls) {
	for fn, decl := range decls.decls {
		sig := fn.Type().(*types.Signature)
		if !fn.Exported() || sig.Recv() != nil || sig.Results().Len() == 0 || !types.IsInterface(sig.Results().At(0).Type()) {
			continue
		}
		iface := sig.Results().At(0).Type()
		param, ok := -1, true
		ast.Inspect(decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				if len(n.Results) == 0 {
					ok = false
					break
				}
				p := wrappedParam(pass, sig, iface, n.Results[0])
				if p < 0 || param >= 0 && p != param {
					ok = false
				}
				param = p
			}
			return ok
		})
		if ok && param >= 0 {
			pass.ExportObjectFact(fn, &decorates{Param: param})
		}
	}
}

// wrappedParam returns the index of the parameter of sig, of type iface,
// that the composite literal e (&T{next: next}) holds in a field of type
// iface, or -1.
func wrappedParam(pass *analysis.Pass, sig *types.Signature, iface types.Type, e ast.Expr) int {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = ast.Unparen(u.X)
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return -1
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		field, _ := pass.TypesInfo.ObjectOf(identOf(kv.Key)).(*types.Var)
		id := identOf(ast.Unparen(kv.Value))
		if field == nil || id == nil || !types.Identical(field.Type(), iface) {
			continue
		}
		for i := range sig.Params().Len() {
			if pass.TypesInfo.Uses[id] == sig.Params().At(i) {
				return i
			}
		}
	}
	return -1
}

// wrappedArgs returns the values the decorators built by value wrap
// (logrepo.Wrap(pgrepo.New(pool), log): pgrepo.New(pool)), also through a
// local variable the package assigns only such calls, or nil.
func wrappedArgs(pass *analysis.Pass, value ast.Expr, locals map[*types.Var][]ast.Expr) []ast.Expr {
	values := []ast.Expr{value}
	if id := identOf(ast.Unparen(value)); id != nil {
		v, ok := pass.TypesInfo.Uses[id].(*types.Var)
		if !ok || v.Parent() == nil || v.Parent() == pass.Pkg.Scope() || len(locals[v]) == 0 {
			return nil
		}
		values = locals[v]
	}
	var out []ast.Expr
	for _, val := range values {
		call, ok := ast.Unparen(val).(*ast.CallExpr)
		if !ok {
			return nil
		}
		fn := callee(pass.TypesInfo, call)
		var f decorates
		if fn == nil || fn.Pkg() == pass.Pkg || fn.Pkg() == nil || !pass.ImportObjectFact(fn.Origin(), &f) || f.Param >= len(call.Args) {
			return nil
		}
		out = append(out, call.Args[f.Param])
	}
	return out
}
