package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// paramBindings resolves a parameter of a function of the package to what
// its callers give it: a field assigned a parameter (an option function,
// func WithLedger(db execer) Option { return func(s *Service) { s.ledger
// = db } }, or a constructor, func newLedger(db execer) *ledger) is bound
// to the pool when every call of that function in the package gives it
// the pool (WithLedger(pool)), or a parameter bound so in turn.
//
// What it does not resolve: a function used as a value (its callers are
// not known), a variadic parameter, and a function called from another
// package: an exported option called only by main is not bound, and one
// called with the pool here and with the transaction by another package
// is taken as bound (vet sees only this package's calls).
type paramBindings struct {
	pass   *analysis.Pass
	params map[*types.Var]paramOf
	calls  map[*types.Func][]*ast.CallExpr
	asVal  map[*types.Func]bool
	busy   map[*types.Var]bool
	locals map[*types.Var][]ast.Expr // every value assigned to a variable; see localValues
}

// localValues returns every value the package assigns to each variable
// (v := …, v = …, var v = …), computed once.
func (b *paramBindings) localValues() map[*types.Var][]ast.Expr {
	if b.locals == nil {
		b.locals = map[*types.Var][]ast.Expr{}
		eachVarAssignment(b.pass, func(id *ast.Ident, value ast.Expr) {
			if v, ok := b.pass.TypesInfo.ObjectOf(id).(*types.Var); ok {
				b.locals[v] = append(b.locals[v], value)
			}
		})
	}
	return b.locals
}

// paramOf is a parameter's function and position.
type paramOf struct {
	fn    *types.Func
	index int
}

func newParamBindings(pass *analysis.Pass) *paramBindings {
	b := &paramBindings{pass: pass, params: map[*types.Var]paramOf{}, calls: map[*types.Func][]*ast.CallExpr{},
		asVal: map[*types.Func]bool{}, busy: map[*types.Var]bool{}}
	called := map[*ast.Ident]bool{}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				fn, ok := pass.TypesInfo.Defs[n.Name].(*types.Func)
				if !ok {
					break
				}
				sig := fn.Type().(*types.Signature)
				for i := range sig.Params().Len() {
					if !(sig.Variadic() && i == sig.Params().Len()-1) {
						b.params[sig.Params().At(i)] = paramOf{fn, i}
					}
				}
			case *ast.CallExpr:
				var id *ast.Ident
				switch f := ast.Unparen(n.Fun).(type) {
				case *ast.Ident:
					id = f
				case *ast.SelectorExpr:
					id = f.Sel
				}
				if fn, ok := pass.TypesInfo.Uses[id].(*types.Func); ok && id != nil && fn.Pkg() == pass.Pkg {
					called[id] = true
					b.calls[fn.Origin()] = append(b.calls[fn.Origin()], n)
				}
			}
			return true
		})
	}
	for id, obj := range pass.TypesInfo.Uses {
		if fn, ok := obj.(*types.Func); ok && fn.Pkg() == pass.Pkg && !called[id] {
			b.asVal[fn.Origin()] = true
		}
	}
	return b
}

// boundTo returns the handle value is bound to (see boundTo), also through
// a parameter every caller in the package gives a bound value, or "".
func (b *paramBindings) boundTo(value ast.Expr) string {
	if h := boundTo(b.pass, value); h != "" {
		return h
	}
	for _, arg := range wrappedArgs(b.pass, value, b.localValues()) {
		if h := b.boundTo(arg); h != "" {
			return h // a decorator of a value bound to the handle
		}
	}
	id, ok := ast.Unparen(value).(*ast.Ident)
	if !ok {
		return ""
	}
	v, ok := b.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		return ""
	}
	args := b.callerArgs(v)
	if args == nil {
		return ""
	}
	b.busy[v] = true
	defer delete(b.busy, v)
	h := ""
	for _, arg := range args {
		if h = b.boundTo(arg); h == "" {
			return ""
		}
	}
	return h
}

// callerArgs returns what every call of the package gives parameter v,
// or nil when v is not such a parameter or its callers are not all known
// (see paramBindings).
func (b *paramBindings) callerArgs(v *types.Var) []ast.Expr {
	p, ok := b.params[v]
	if !ok || b.busy[v] || b.asVal[p.fn] || len(b.calls[p.fn]) == 0 {
		return nil
	}
	var args []ast.Expr
	for _, call := range b.calls[p.fn] {
		if p.index >= len(call.Args) {
			return nil
		}
		args = append(args, call.Args[p.index])
	}
	return args
}

// concreteTypes returns the concrete types value may have: its own type,
// or, for a parameter of interface type, the concrete types of what every
// caller gives it (WithNotifier(&sqsNotifier{…}) for the option's n), or
// nil when one of them is not known.
func (b *paramBindings) concreteTypes(value ast.Expr) []types.Type {
	t := b.pass.TypesInfo.TypeOf(value)
	if t == nil {
		return nil
	}
	if !types.IsInterface(t) {
		return []types.Type{t}
	}
	if inner := wrappedArgs(b.pass, value, b.localValues()); inner != nil {
		var out []types.Type
		for _, arg := range inner { // a decorator: what it wraps runs
			ts := b.concreteTypes(arg)
			if ts == nil {
				return nil
			}
			out = append(out, ts...)
		}
		return out
	}
	id, ok := ast.Unparen(value).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := b.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	args := b.callerArgs(v)
	if args == nil {
		return nil
	}
	b.busy[v] = true
	defer delete(b.busy, v)
	var out []types.Type
	for _, arg := range args {
		ts := b.concreteTypes(arg)
		if ts == nil {
			return nil
		}
		out = append(out, ts...)
	}
	return out
}
