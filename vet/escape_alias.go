package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// outerAlias reports whether v, a local pointer variable of the handler
// fn whose body is body, points into state that outlives the handler, so
// that a store into a field of v (v.tx = tx) is a store there: a value
// assigned to v is a field or element of a variable declared outside body
// (v := p.visits[id], v := &p.slots[i]), or the result of a method of the
// package called on one that returns what its receiver keeps (v :=
// p.sessions.get(id), get returning the visit it looked up in, or put
// into, its map: see keptByReceiver).
//
// What it does not catch: a pointer obtained from a function of another
// package or through several locals, and a method returning what it keeps
// by another route (a helper, a channel).
func outerAlias(pass *analysis.Pass, decls *funcDecls, v *types.Var, fn ast.Node, body *ast.BlockStmt) bool {
	if _, ptr := v.Type().Underlying().(*types.Pointer); !ptr || v.Pos() < body.Pos() || v.Pos() >= body.End() {
		return false
	}
	alias := false
	eachValueOf(pass, body, v, func(value ast.Expr) {
		value = ast.Unparen(value)
		if u, ok := value.(*ast.UnaryExpr); ok {
			value = u.X
		}
		switch x := value.(type) {
		case *ast.IndexExpr, *ast.SelectorExpr:
			if _, outside := outerRoot(pass, x, fn, body); outside {
				alias = true
			}
		case *ast.CallExpr:
			sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr)
			if !ok {
				return
			}
			if _, outside := outerRoot(pass, sel.X, fn, body); !outside && !declaredOutside(pass, sel.X, body) {
				return
			}
			if f := callee(pass.TypesInfo, x); f != nil && decls.decls[f.Origin()] != nil && keptByReceiver(pass, decls.decls[f.Origin()]) {
				alias = true
			}
		}
	})
	return alias
}

// declaredOutside reports whether x is an identifier of a variable
// declared outside body (the receiver, a parameter).
func declaredOutside(pass *analysis.Pass, x ast.Expr, body *ast.BlockStmt) bool {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := pass.TypesInfo.Uses[id].(*types.Var)
	return ok && (v.Pos() < body.Pos() || v.Pos() >= body.End())
}

// eachValueOf calls note with each value body assigns to v.
func eachValueOf(pass *analysis.Pass, body *ast.BlockStmt, v *types.Var, note func(ast.Expr)) {
	ast.Inspect(body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for i, l := range as.Lhs {
				if id := identOf(l); id == nil || pass.TypesInfo.ObjectOf(id) != v {
					continue
				}
				switch {
				case len(as.Lhs) == len(as.Rhs):
					note(as.Rhs[i])
				case i == 0 && len(as.Rhs) == 1:
					note(as.Rhs[0]) // v, ok := m[k]
				}
			}
		}
		return true
	})
}

// keptByReceiver reports whether the method decl returns what its
// receiver keeps: a field or element of the receiver, or a local it
// looked up in the receiver's state or stored there (v, ok := s.m[k]; …;
// s.m[k] = v; return v).
func keptByReceiver(pass *analysis.Pass, decl *ast.FuncDecl) bool {
	if decl.Recv == nil || len(decl.Recv.List) == 0 || len(decl.Recv.List[0].Names) == 0 {
		return false
	}
	recv := pass.TypesInfo.Defs[decl.Recv.List[0].Names[0]]
	rooted := func(e ast.Expr) bool {
		root, _ := outerRoot(pass, e, decl, decl.Body)
		return root != nil && root == recv
	}
	kept := false
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		ret, ok := n.(*ast.ReturnStmt)
		if !ok || len(ret.Results) == 0 {
			return !kept
		}
		r := ast.Unparen(ret.Results[0])
		if u, ok := r.(*ast.UnaryExpr); ok {
			r = u.X
		}
		if _, isID := r.(*ast.Ident); !isID {
			kept = kept || rooted(r)
			return !kept
		}
		local, ok := pass.TypesInfo.Uses[r.(*ast.Ident)].(*types.Var)
		if !ok {
			return !kept
		}
		ast.Inspect(decl.Body, func(m ast.Node) bool {
			as, ok := m.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for i, l := range as.Lhs {
				var rhs ast.Expr = as.Rhs[0]
				if len(as.Rhs) == len(as.Lhs) {
					rhs = as.Rhs[i]
				}
				if id := identOf(l); id != nil && pass.TypesInfo.ObjectOf(id) == local && rooted(rhs) {
					kept = true // v, ok := s.m[k]
				}
				if id := identOf(ast.Unparen(rhs)); id != nil && pass.TypesInfo.Uses[id] == local && rooted(l) {
					kept = true // s.m[k] = v
				}
			}
			return !kept
		})
		return !kept
	})
	return kept
}

// parksInAlias is parksTx for a store into a field or element of a local
// pointer that points into state outliving the handler (see outerAlias):
// v := p.sessions.get(id); v.tx = tx.
func parksInAlias(pass *analysis.Pass, decls *funcDecls, as *ast.AssignStmt, fn ast.Node, body *ast.BlockStmt, tracked map[types.Object]bool) (ast.Expr, types.Object) {
	for i, l := range as.Lhs {
		if _, isID := ast.Unparen(l).(*ast.Ident); isID {
			continue // rebinding the local itself
		}
		root, outside := outerRoot(pass, l, fn, body)
		v, ok := root.(*types.Var)
		if outside || !ok || !outerAlias(pass, decls, v, fn, body) {
			continue
		}
		if obj := carriesTx(pass, assignedTo(as, i), tracked); obj != nil {
			return l, obj
		}
	}
	return nil, nil
}
