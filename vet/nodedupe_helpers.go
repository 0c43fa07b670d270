package vet

import (
	"go/ast"
	"go/types"
)

// NoDedupe follows a chain or a Config built by a helper function of the
// package under analysis (consumer.New(src, h, baseConfig("pick"),
// standardChain(log)...)): the helper's answer is what every value it
// returns answers, read in the helper's own body (a slice literal, a
// local variable and its appends, a Config literal and the fields set on
// it). A chain helper that only hands back its parameters answers what its
// caller's arguments answer (see forwarded); a helper that returns a
// parameter among other values, a field, a named result or the
// result of a call it cannot see into answers unknown, and so does a
// helper of another package (a platform team's chain may add the
// idempotency middleware): the benefit of the doubt stays with what is
// not in sight.
//
// What it does not follow: a helper with more than one result, a method,
// a function value, a helper that modifies a slice or Config it was given.

// helperDecl returns the declaration of the package's function that call
// runs, when it is a plain function with a body and exactly one result.
func (d *dedupe) helperDecl(call *ast.CallExpr) *ast.FuncDecl {
	fn := callee(d.pass.TypesInfo, call)
	if fn == nil || fn.Pkg() != d.pass.Pkg || fn.Type().(*types.Signature).Recv() != nil {
		return nil
	}
	decl := d.decls.decls[fn.Origin()]
	if decl == nil || decl.Body == nil || decl.Type.Results == nil || decl.Type.Results.NumFields() != 1 {
		return nil
	}
	if len(decl.Type.Results.List[0].Names) > 0 {
		return nil // a named result may be set without being returned by name
	}
	return decl
}

// helperReturns answers for a helper what every value it returns answers
// by ask, read with the helper's body as the enclosing function; unknown
// when it returns nothing visible or is being followed already (a cycle).
func (d *dedupe) helperReturns(decl *ast.FuncDecl, ask func(ast.Expr) tri) tri {
	if seen, ok := d.helpers[decl]; ok {
		return seen
	}
	d.helpers[decl] = unknown
	outer := d.fn
	d.fn = decl.Body
	defer func() { d.fn = outer }()
	answer, returns := no, 0
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its returns are its own
		case *ast.ReturnStmt:
			returns++
			if len(n.Results) != 1 {
				answer = unknown
				return false
			}
			answer = max(answer, ask(n.Results[0]))
		}
		return true
	})
	if returns == 0 {
		answer = unknown
	}
	d.helpers[decl] = answer
	return answer
}

// helperChain answers whether the middleware slice a helper of the
// package returns deduplicates, or ok false when call is no such helper.
func (d *dedupe) helperChain(call *ast.CallExpr) (tri, bool) {
	decl := d.helperDecl(call)
	if decl == nil {
		return unknown, false
	}
	if answer, ok := d.forwarded(decl, call); ok {
		return answer, true
	}
	return d.helperReturns(decl, func(r ast.Expr) tri { return d.middleware(r, true) }), true
}

// helperConfig answers whether the Config a helper of the package returns
// sets Duplicates, or ok false when call is no such helper.
func (d *dedupe) helperConfig(call *ast.CallExpr) (tri, bool) {
	decl := d.helperDecl(call)
	if decl == nil {
		return unknown, false
	}
	return d.helperReturns(decl, d.optsOut), true
}
