package vet

// The stores by which a handler's transaction or context outlives it: see
// Escape.

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// parksTx returns the left-hand side and the transaction or context when
// as stores a value holding one of tracked (see carriesTx) where it
// outlives the handler fn whose body is body: in a
// field or element of a variable declared outside body (the receiver, a
// captured or package-level variable), or in a package-level variable.
func parksTx(pass *analysis.Pass, as *ast.AssignStmt, fn ast.Node, body *ast.BlockStmt, tracked map[types.Object]bool) (ast.Expr, types.Object) {
	for i, l := range as.Lhs {
		root, ok := outerRoot(pass, l, fn, body)
		if !ok || root == nil {
			continue
		}
		if obj := carriesTx(pass, assignedTo(as, i), tracked); obj != nil {
			return l, obj
		}
	}
	return nil, nil
}

// storesTx returns the tracked transaction or context that call stores in
// a sync.Map, an atomic.Value or an atomic.Pointer (Store, Swap,
// CompareAndSwap, LoadOrStore) rooted outside the handler fn (see
// outerRoot), or nil.
func storesTx(pass *analysis.Pass, call *ast.CallExpr, fn ast.Node, body *ast.BlockStmt, tracked map[types.Object]bool) types.Object {
	f := callee(pass.TypesInfo, call)
	if f == nil {
		return nil
	}
	switch f.Name() {
	case "Store", "Swap", "CompareAndSwap", "LoadOrStore":
	default:
		return nil
	}
	if !isMethod(f, "sync", "Map", f.Name()) && !isMethod(f, "sync/atomic", "Value", f.Name()) && !isMethod(f, "sync/atomic", "Pointer", f.Name()) {
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	if _, outside := outerRoot(pass, sel.X, fn, body); !outside {
		if id, isID := ast.Unparen(sel.X).(*ast.Ident); !isID || outerVar(pass, id, fn) == nil {
			return nil
		}
	}
	for _, a := range call.Args {
		if obj := carriesTx(pass, a, tracked); obj != nil {
			return obj
		}
	}
	return nil
}

// outerVar returns the variable id refers to when it is declared outside
// fn (a captured or package-level variable), or nil.
func outerVar(pass *analysis.Pass, id *ast.Ident, fn ast.Node) types.Object {
	obj, ok := pass.TypesInfo.Uses[id].(*types.Var)
	if !ok || obj.Pos() >= fn.Pos() && obj.Pos() < fn.End() {
		return nil
	}
	return obj
}

// carriesTx returns the tracked object (the handler's transaction or
// context) that the value of e holds, or nil: the object itself, a
// composite literal or an append with an element holding it; for a
// transaction also a function literal using it, or the result of a call
// given it unless that result is an error or of a basic type (a count, a
// flag: it holds nothing). A context is followed only as itself and in
// literals: a call given the context (a logger, a span) holds no
// transaction.
func carriesTx(pass *analysis.Pass, e ast.Expr, tracked map[types.Object]bool) types.Object {
	txs := txsOf(tracked)
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if obj := pass.TypesInfo.Uses[x]; tracked[obj] {
			return obj
		}
	case *ast.FuncLit:
		return uses(pass, x.Body, txs)
	case *ast.UnaryExpr:
		return carriesTx(pass, x.X, tracked)
	case *ast.KeyValueExpr:
		return carriesTx(pass, x.Value, tracked)
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			if obj := carriesTx(pass, el, tracked); obj != nil {
				return obj
			}
		}
	case *ast.CallExpr:
		if id, ok := ast.Unparen(x.Fun).(*ast.Ident); ok {
			if b, ok := pass.TypesInfo.Uses[id].(*types.Builtin); ok && b.Name() == "append" {
				for _, a := range x.Args {
					if obj := carriesTx(pass, a, tracked); obj != nil {
						return obj
					}
				}
				return nil
			}
		}
		tracked = txs
		if t := pass.TypesInfo.TypeOf(x); t != nil {
			if _, basic := t.Underlying().(*types.Basic); basic || types.Identical(t, types.Universe.Lookup("error").Type()) {
				return nil
			}
			if tuple, ok := t.(*types.Tuple); ok && tuple.Len() == 0 {
				return nil
			}
		}
		for _, a := range x.Args {
			if obj := carriesTx(pass, a, tracked); obj != nil {
				return obj
			}
		}
	}
	return nil
}

// outerRoot returns the variable at the root of l (x in x.f, x.f[i], *x)
// and whether l stores outside the function fn whose body is body: l is a
// field, element or indirection of a variable declared outside body (the
// receiver, a parameter, a captured variable), a variable declared outside
// fn (captured by a closure), or a package-level variable.
func outerRoot(pass *analysis.Pass, l ast.Expr, fn ast.Node, body *ast.BlockStmt) (types.Object, bool) {
	outer := false
	for {
		switch x := ast.Unparen(l).(type) {
		case *ast.SelectorExpr:
			if _, isVar := pass.TypesInfo.Uses[x.Sel].(*types.Var); !isVar {
				return nil, false
			}
			if id, ok := x.X.(*ast.Ident); ok {
				if _, isPkg := pass.TypesInfo.Uses[id].(*types.PkgName); isPkg {
					return pass.TypesInfo.Uses[x.Sel], true // another package's variable
				}
			}
			l, outer = x.X, true
		case *ast.IndexExpr:
			l, outer = x.X, true
		case *ast.StarExpr:
			l, outer = x.X, true
		case *ast.Ident:
			obj, ok := pass.TypesInfo.Uses[x].(*types.Var)
			if !ok {
				return nil, false
			}
			if obj.Parent() == obj.Pkg().Scope() {
				return obj, true
			}
			if outer { // a field or element: the receiver and parameters count as outside
				return obj, obj.Pos() < body.Pos() || obj.Pos() >= body.End()
			}
			return obj, obj.Pos() < fn.Pos() || obj.Pos() >= fn.End() // a captured variable
		default:
			return nil, false
		}
	}
}

// assignedTo returns the value as assigns to its i-th left-hand side: the
// i-th right-hand side, or the one call of a multi-value assignment.
func assignedTo(as *ast.AssignStmt, i int) ast.Expr {
	if len(as.Rhs) == len(as.Lhs) {
		return as.Rhs[i]
	}
	return as.Rhs[0]
}
