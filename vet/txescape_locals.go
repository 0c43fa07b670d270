package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/ssa"
)

// poolLocals adds to bound the local variables of the package that may
// hold a handle where a call through them does not show it: a variable of
// interface type assigned the handle (var db execer = tx; if direct { db =
// h.pool }), assigned a handle's method value, or assigned a field bound
// to the pool (q := h.queries). A local assigned a value built from the
// pool by a call (q := orderdb.New(h.pool)) is not added: TxEscape reports
// that call where it is made. It returns where each local is bound, so
// that a call through a local also assigned something else is judged by
// the assignments that reach it (see localBinds).
func poolLocals(pass *analysis.Pass, bound map[*types.Var]string) *localBinds {
	fields := map[*types.Var]string{}
	for v, h := range bound {
		fields[v] = h
	}
	l := &localBinds{pass: pass, binds: map[*types.Var][]ast.Expr{}}
	note := func(id *ast.Ident, value ast.Expr) {
		v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var)
		if !ok || v.IsField() || v.Parent() == nil || v.Parent() == pass.Pkg.Scope() || dbHandle(v.Type()) != "" {
			return
		}
		value = ast.Unparen(value)
		if _, isCall := value.(*ast.CallExpr); isCall {
			return
		}
		if h := boundTo(pass, value); h != "" && (dbHandle(pass.TypesInfo.TypeOf(value)) == "" || queryingInterface(v.Type())) {
			bound[v] = h
			l.binds[v] = append(l.binds[v], value)
			return
		}
		if sel, ok := value.(*ast.SelectorExpr); ok {
			if f, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Var); ok && fields[f] != "" {
				bound[v] = fields[f]
				l.binds[v] = append(l.binds[v], value)
			}
		}
	}
	eachVarAssignment(pass, note)
	l.rebound = reassigned(pass, l.binds)
	return l
}

// localBinds holds the values that bind each local poolLocals found, and
// judges a use of such a local on the package's SSA form: the use is bound
// when one of those values may reach it, following the φ-nodes where
// branches join. A local assigned only binding values is bound at every
// use, without SSA; one also rebound (q := s.q; q = q.WithTx(tx)) is
// bound only where a binding value may still be in it: its uses after the
// rebinding are not.
//
// What it does not cover: a local whose address is taken or that a
// closure captures (SSA keeps it in memory) is bound at every use when any
// assignment binds it, and a value copied through another local (q2 := q)
// is not followed.
type localBinds struct {
	pass    *analysis.Pass
	binds   map[*types.Var][]ast.Expr
	rebound map[*types.Var]bool
	pkg     *ssa.Package // built, with debug information, on the first question
}

// reaches reports whether use, an identifier denoting v, may hold one of
// the values that bind v; true for a variable that is not such a local,
// or when SSA cannot tell.
func (l *localBinds) reaches(v *types.Var, use *ast.Ident) bool {
	if l == nil || !l.rebound[v] {
		return true
	}
	if l.pkg == nil {
		l.pkg = buildSSA(l.pass, ssa.GlobalDebug)
	}
	fn := l.function(use)
	if fn == nil {
		return true
	}
	val, addr := fn.ValueForExpr(use)
	if val == nil || addr || inMemory(val) {
		return true
	}
	binding := map[ssa.Value]bool{}
	for _, e := range l.binds[v] {
		if l.function(e) != fn {
			return true // bound in a closure: the variable is in memory
		}
		if b, addr := fn.ValueForExpr(e); b != nil && !addr {
			binding[b] = true
		} else {
			return true
		}
	}
	seen := map[ssa.Value]bool{}
	var reach func(x ssa.Value) bool
	reach = func(x ssa.Value) bool {
		if seen[x] {
			return false
		}
		seen[x] = true
		switch y := x.(type) {
		case *ssa.Phi:
			for _, e := range y.Edges {
				if reach(e) {
					return true
				}
			}
			return false
		case *ssa.MakeInterface:
			return binding[x] || reach(y.X)
		case *ssa.ChangeType:
			return binding[x] || reach(y.X)
		case *ssa.ChangeInterface:
			return binding[x] || reach(y.X)
		}
		return binding[x]
	}
	return reach(val)
}

// function returns the SSA function whose body holds n, or nil.
func (l *localBinds) function(n ast.Node) *ssa.Function {
	for _, f := range l.pass.Files {
		if f.FileStart <= n.Pos() && n.Pos() < f.FileEnd {
			path, _ := astutil.PathEnclosingInterval(f, n.Pos(), n.End())
			return ssa.EnclosingFunction(l.pkg, path)
		}
	}
	return nil
}

// inMemory reports whether v is a load of a variable SSA keeps in memory
// (its address taken, or captured by a closure).
func inMemory(v ssa.Value) bool {
	u, ok := v.(*ssa.UnOp)
	if !ok || u.Op != token.MUL {
		return false
	}
	switch u.X.(type) {
	case *ssa.Alloc, *ssa.FreeVar:
		return true
	}
	return false
}

// reassigned returns the locals of binds that are given a value other than
// their binding ones: declared or assigned more often than bound (a
// parameter, a tuple assignment, a range variable, x++ count as values).
func reassigned(pass *analysis.Pass, binds map[*types.Var][]ast.Expr) map[*types.Var]bool {
	count := map[*types.Var]int{}
	lhs := func(e ast.Expr) {
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && binds[v] != nil {
				count[v]++ // a use on the left: an assignment (a definition is in Defs)
			}
		}
	}
	for id, obj := range pass.TypesInfo.Defs {
		if v, ok := obj.(*types.Var); ok && binds[v] != nil && id != nil {
			count[v]++
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, e := range n.Lhs {
					lhs(e)
				}
			case *ast.RangeStmt:
				if n.Tok == token.ASSIGN {
					lhs(n.Key)
					lhs(n.Value)
				}
			case *ast.IncDecStmt:
				lhs(n.X)
			}
			return true
		})
	}
	out := map[*types.Var]bool{}
	for v, c := range count {
		if c > len(binds[v]) {
			out[v] = true
		}
	}
	return out
}
