package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// poolFields returns the struct fields of the package's types that are
// bound to a database handle out of a handler's sight, with what they are
// bound to: every value assigned to the field in the package (in a
// composite literal or an assignment) is one of
//
//   - a handle itself, stored in an interface-typed field (db: pool);
//   - a method value of a handle that runs statements (exec: pool.Exec);
//   - a value built by a call given a handle where an interface that runs
//     statements is expected (q: orderdb.New(pool), generated query code);
//   - a parameter that every caller in the package gives one of these (an
//     option function's s.ledger = db, WithLedger(pool); see
//     paramBindings).
//
// A field also assigned anything else (a transaction, a parameter) is not
// returned: which value a handler sees is not known. The local variables
// that poolLocals finds are returned too, with where they are bound.
func poolFields(pass *analysis.Pass) (map[*types.Var]string, *localBinds) {
	bound := map[*types.Var]string{}
	other := map[*types.Var]bool{}
	params := newParamBindings(pass)
	note := func(field *types.Var, value ast.Expr) {
		if h := params.boundTo(value); h != "" {
			bound[field] = h
		} else {
			other[field] = true
		}
	}
	eachFieldAssignment(pass, note)
	eachVarAssignment(pass, func(id *ast.Ident, value ast.Expr) {
		if v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var); ok && v.Parent() == pass.Pkg.Scope() {
			note(v, value) // a package-level variable
		}
	})
	for v := range other {
		delete(bound, v)
	}
	for _, obj := range pass.TypesInfo.Uses {
		v, ok := obj.(*types.Var)
		if !ok || v.Pkg() == nil || v.Pkg() == pass.Pkg || other[v] {
			continue
		}
		var fact boundToHandle
		if pass.ImportObjectFact(v, &fact) {
			bound[v] = fact.Handle // bound in its own package
		}
	}
	locals := poolLocals(pass, bound)
	for v := range bound {
		if dbHandle(v.Type()) != "" {
			delete(bound, v) // its method calls are reported as such
		}
	}
	return bound, locals
}

// boundToHandle is TxEscape's fact about a struct field or a
// package-level variable that its package binds to a database handle
// (see poolFields): a package of the module that calls through it, from a
// transactional handler, runs statements outside the claim's transaction,
// though the binding is out of its sight (a platform package's
// package-level queries, a dependencies struct built by the service's
// wiring package).
type boundToHandle struct{ Handle string }

// AFact marks boundToHandle as an analysis fact.
func (*boundToHandle) AFact() {}

func (f *boundToHandle) String() string { return "boundToHandle(" + f.Handle + ")" }

// exportBoundFacts exports boundToHandle for the package's fields and
// package-level variables in bound.
func exportBoundFacts(pass *analysis.Pass, bound map[*types.Var]string) {
	if frameworkPackage(pass.Pkg.Path()) {
		return // oncely manages its connections by design
	}
	for v, h := range bound {
		if v.Pkg() == pass.Pkg && (v.IsField() || v.Parent() == pass.Pkg.Scope()) {
			pass.ExportObjectFact(v, &boundToHandle{Handle: h})
		}
	}
}

// boundTo returns the handle value is bound to (see poolFields), or "".
func boundTo(pass *analysis.Pass, value ast.Expr) string {
	value = ast.Unparen(value)
	if h := dbHandle(pass.TypesInfo.TypeOf(value)); h != "" {
		return h
	}
	switch v := value.(type) {
	case *ast.SelectorExpr:
		if s := pass.TypesInfo.Selections[v]; s != nil && s.Kind() == types.MethodVal && dbMethods[v.Sel.Name] {
			if h := dbHandle(s.Recv()); h != "" {
				return h + "." + v.Sel.Name
			}
		}
	case *ast.CallExpr:
		sig, ok := pass.TypesInfo.TypeOf(v.Fun).Underlying().(*types.Signature)
		if !ok || pass.TypesInfo.Types[v.Fun].IsType() {
			return ""
		}
		for i, arg := range v.Args {
			if i < sig.Params().Len() && queryingInterface(sig.Params().At(i).Type()) {
				if h := dbHandle(pass.TypesInfo.TypeOf(arg)); h != "" {
					return h
				}
			}
		}
	}
	return ""
}

// poolFieldCall returns, for a call through a field or local poolFields
// returned — its function value called (h.exec(ctx, …), exec(ctx, …)), or
// a method taking a context called on it (h.q.InsertOrder(ctx, …),
// h.db.Exec(ctx, …), q.InsertOrder(ctx, …)) — its name and what it is
// bound to. A local is taken as bound at the call only when one of its
// binding assignments may reach it (see localBinds).
func poolFieldCall(pass *analysis.Pass, call *ast.CallExpr, fields map[*types.Var]string, locals *localBinds) (string, string) {
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && fields[v] != "" && locals.reaches(v, id) {
			return v.Name(), fields[v] // a local holding a method value
		}
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	if v, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Var); ok && fields[v] != "" {
		return v.Name(), fields[v]
	}
	var v *types.Var
	switch x := ast.Unparen(sel.X).(type) {
	case *ast.SelectorExpr:
		v, _ = pass.TypesInfo.Uses[x.Sel].(*types.Var)
	case *ast.Ident:
		v, _ = pass.TypesInfo.Uses[x].(*types.Var)
		if v != nil && !locals.reaches(v, x) {
			return "", ""
		}
	}
	if v == nil || fields[v] == "" {
		return "", ""
	}
	sig, ok := pass.TypesInfo.TypeOf(call.Fun).(*types.Signature)
	if !ok || sig.Params().Len() == 0 || !isNamed(sig.Params().At(0).Type(), pathContext, "Context") {
		return "", ""
	}
	return v.Name() + "." + sel.Sel.Name, fields[v]
}

// eachVarAssignment calls note for every value the package gives a named
// variable: in an assignment (x = value, x := value) and in a declaration
// (var x = value).
func eachVarAssignment(pass *analysis.Pass, note func(id *ast.Ident, value ast.Expr)) {
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							note(id, n.Rhs[i])
						}
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i, id := range n.Names {
						note(id, n.Values[i])
					}
				}
			}
			return true
		})
	}
}

// dynamicFields returns the interface-typed struct fields of the package
// whose dynamic types are visible: every value the package assigns to the
// field (in a composite literal or an assignment) has a concrete type
// (h := &handler{accounts: accounts.NewRepo(pool)}), or is a parameter
// every caller in the package gives a value of a concrete type (an option
// function's c.notify = n, WithNotifier(&sqsNotifier{…}); see
// paramBindings). A call through such a field runs the method of one of
// those types. A field also assigned a value whose type is not known (a
// parameter of an exported function, a function's interface result) is
// not returned.
func dynamicFields(pass *analysis.Pass) map[*types.Var][]types.Type {
	dyn := map[*types.Var][]types.Type{}
	unknown := map[*types.Var]bool{}
	params := newParamBindings(pass)
	note := func(field *types.Var, value ast.Expr) {
		if !types.IsInterface(field.Type()) {
			return
		}
		ts := params.concreteTypes(value)
		if ts == nil {
			unknown[field] = true
			return
		}
	next:
		for _, t := range ts {
			for _, prev := range dyn[field] {
				if types.Identical(prev, t) {
					continue next
				}
			}
			dyn[field] = append(dyn[field], t)
		}
	}
	eachFieldAssignment(pass, note)
	for v := range unknown {
		delete(dyn, v)
	}
	return dyn
}

// dynamicMethods returns the methods of the concrete types that a call
// through a field of dyn (h.accounts.Touch(ctx, …)) may run, or nil.
func dynamicMethods(pass *analysis.Pass, call *ast.CallExpr, dyn map[*types.Var][]types.Type) []*types.Func {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	inner, ok := ast.Unparen(sel.X).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	v, ok := pass.TypesInfo.Uses[inner.Sel].(*types.Var)
	if !ok {
		return nil
	}
	var out []*types.Func
	for _, t := range dyn[v] {
		obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, sel.Sel.Name)
		if m, ok := obj.(*types.Func); ok {
			out = append(out, m)
		}
	}
	return out
}

// funcFields returns the struct fields and variables of function type to
// which the package assigns method values or functions (save: r.save, var
// post = http.Post), with every
// function assigned: a call through the field runs one of them. A field
// also given a function literal or another value keeps the functions
// known: a call may run any of them.
func funcFields(pass *analysis.Pass) map[*types.Var][]*types.Func {
	out := map[*types.Var][]*types.Func{}
	note := func(field *types.Var, value ast.Expr) {
		if _, ok := field.Type().Underlying().(*types.Signature); !ok {
			return
		}
		var fn *types.Func
		switch v := ast.Unparen(value).(type) {
		case *ast.SelectorExpr:
			if s := pass.TypesInfo.Selections[v]; s != nil && s.Kind() == types.MethodVal {
				fn, _ = s.Obj().(*types.Func)
			} else {
				fn, _ = pass.TypesInfo.Uses[v.Sel].(*types.Func)
			}
		case *ast.Ident:
			fn, _ = pass.TypesInfo.Uses[v].(*types.Func)
		}
		if fn == nil {
			return
		}
		for _, f := range out[field] {
			if f == fn {
				return
			}
		}
		out[field] = append(out[field], fn)
	}
	eachFieldAssignment(pass, note)
	eachVarAssignment(pass, func(id *ast.Ident, value ast.Expr) {
		if v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var); ok {
			note(v, value) // a variable: var post = http.Post, send := smtp.SendMail
		}
	})
	return out
}

// fieldFuncs returns the functions a call through a field or a variable
// of funcs (h.save(ctx, …), post(url, …)) may run, or nil.
func fieldFuncs(pass *analysis.Pass, call *ast.CallExpr, funcs map[*types.Var][]*types.Func) []*types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.Ident:
		id = f
	}
	v, ok := pass.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	return funcs[v]
}

// litFields maps the struct fields of function type (of this package or
// another) to the function literals without a pgx.Tx parameter the
// package assigns them: a dependencies struct whose functions main wires
// as closures over the pool (Deps{Record: func(ctx …) error { …
// pool.Exec … }}). A call through such a field runs one of them, and
// TxEscape follows it into each. A literal given the transaction is
// written against it; what else it uses (a test's fault injected through
// an admin pool) is left to review.
type litFields map[*types.Var][]*ast.FuncLit

func funcLitFields(pass *analysis.Pass) litFields {
	out := litFields{}
	eachFieldAssignment(pass, func(field *types.Var, value ast.Expr) {
		if lit, ok := ast.Unparen(value).(*ast.FuncLit); ok && !takesTx(pass.TypesInfo.TypeOf(lit)) {
			out[field] = append(out[field], lit)
		}
	})
	return out
}

// of returns the function literals a call through a field of l
// (h.deps.Record(ctx, …)) may run, or nil.
func (l litFields) of(pass *analysis.Pass, call *ast.CallExpr) []*ast.FuncLit {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	v, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Var)
	if !ok || !v.IsField() {
		return nil
	}
	return l[v]
}

// eachFieldAssignment calls note for every value the package stores in a
// struct field: in a composite literal (Field: value) and in an assignment
// (x.Field = value).
func eachFieldAssignment(pass *analysis.Pass, note func(field *types.Var, value ast.Expr)) {
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && v.IsField() {
						note(v, n.Value)
					}
				}
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					break
				}
				for i, l := range n.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok {
						if v, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Var); ok && v.IsField() {
							note(v, n.Rhs[i])
						}
					}
				}
			}
			return true
		})
	}
}
