package vet

import (
	"go/ast"
	"go/types"
)

// NoDedupe follows a chain helper of the package that only hands back
// middleware its caller gives it (func pipeline(mws ...consumer.Middleware)
// []consumer.Middleware { return mws }): every return of the helper
// returns one of its parameters, which the helper never assigns, so the
// chain is what the call's arguments for that parameter answer, read where
// the call is (pipeline(recoverer(log), middleware.Logging())... is a chain
// of the package's recoverer and logging). Such a helper's answer depends
// on its call, so it is not kept with the helper's other answers.
//
// What it does not follow: a helper that returns a parameter on one path
// and something else on another, or that appends to, slices or assigns
// the parameter (withExtras(extra...), appending the caller's middleware
// to its own: unknown, see helperChain), and a Config handed back the same
// way.

// forwarded answers what the arguments call binds to the parameters decl
// returns answer, or ok false when decl is not a helper that returns only
// its parameters unchanged.
func (d *dedupe) forwarded(decl *ast.FuncDecl, call *ast.CallExpr) (tri, bool) {
	fn, ok := d.pass.TypesInfo.Defs[decl.Name].(*types.Func)
	if !ok {
		return unknown, false
	}
	sig := fn.Signature()
	index := map[types.Object]int{}
	for i := range sig.Params().Len() {
		index[sig.Params().At(i)] = i
	}
	var returned []int
	forwards := true
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its returns are its own
		case *ast.ReturnStmt:
			i, ok := -1, false
			if len(n.Results) == 1 {
				if id, isID := ast.Unparen(n.Results[0]).(*ast.Ident); isID {
					i, ok = index[d.pass.TypesInfo.Uses[id]]
				}
			}
			if !ok {
				forwards = false
			}
			returned = append(returned, i)
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok {
					if _, param := index[d.pass.TypesInfo.Uses[id]]; param {
						forwards = false
					}
				}
			}
		case *ast.UnaryExpr: // &param: written through a pointer
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op.String() == "&" {
				if _, param := index[d.pass.TypesInfo.Uses[id]]; param {
					forwards = false
				}
			}
		}
		return forwards
	})
	if !forwards || len(returned) == 0 {
		return unknown, false
	}
	answer := no
	for _, i := range returned {
		answer = max(answer, d.boundArgs(sig, call, i))
	}
	return answer, true
}

// boundArgs answers what the arguments call binds to parameter i of sig
// answer: a middleware slice, or for a variadic parameter the middleware
// listed (or the slice spread).
func (d *dedupe) boundArgs(sig *types.Signature, call *ast.CallExpr, i int) tri {
	if i >= len(call.Args) {
		return no // an empty variadic list
	}
	if !sig.Variadic() || i < sig.Params().Len()-1 || call.Ellipsis != 0 {
		return d.middleware(call.Args[i], true)
	}
	answer := no
	for _, a := range call.Args[i:] {
		answer = max(answer, d.middleware(a, false))
	}
	return answer
}
