package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// returnedMethods returns the methods that call runs when it calls a
// method on the interface a function of the package returns
// (r.prices(tx).Save(ctx, p), prices returning a PriceRepository): every
// return statement of that function gives a value of a concrete type (a
// decorator built per message, &publishingPrices{next: pgprices.New(tx)}),
// whose method of that name runs. TxEscape follows the call into them, as
// into an interface field's dynamic types (see dynamicFields).
//
// What it does not catch: a function that returns another function's
// interface result, a function of another package (its body is not
// seen), and a result kept in a variable before the call.
func returnedMethods(pass *analysis.Pass, call *ast.CallExpr, decls *funcDecls) []*types.Func {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	inner, ok := ast.Unparen(sel.X).(*ast.CallExpr)
	if !ok || !types.IsInterface(pass.TypesInfo.TypeOf(inner)) {
		return nil
	}
	fn := callee(pass.TypesInfo, inner)
	if fn == nil {
		return nil
	}
	decl := decls.decls[fn.Origin()]
	if decl == nil {
		return nil
	}
	var out []*types.Func
	known := true
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			var t types.Type
			if len(n.Results) > 0 {
				t = pass.TypesInfo.TypeOf(n.Results[0])
			}
			if t == nil || types.IsInterface(t) {
				known = false
				break
			}
			obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, sel.Sel.Name)
			if m, ok := obj.(*types.Func); ok {
				out = append(out, m)
			}
		}
		return known
	})
	if !known {
		return nil
	}
	return out
}
