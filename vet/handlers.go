package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// txHandler is a transactional handler: a function that runs inside the
// idempotency claim's transaction. They are
//
//   - the function given to postgres.HandlerFunc or postgres.BatchHandlerFunc
//     (a literal, or a function or method of the package);
//   - the function given to a Store's Process or ProcessBatch (store.Store,
//     store.BatchStore or *postgres.Store), whose context carries the
//     transaction;
//   - every function (or literal) that calls postgres.Tx itself;
//   - the Handle and HandleBatch methods, declared in the package, of a
//     handler given to consumer.New or consumer.Chain beside
//     middleware.Idempotency of a *postgres.Store: the claim's
//     transaction is in their context; also a plain function converted to
//     consumer.HandlerFunc there, and the handler a local variable of
//     interface type is assigned (see claimedHandlers);
//   - the functions a handler runs through a function value given its
//     transaction: the routes of a router's table (see routedHandlers);
//   - every function of the shape postgres.HandlerFunc or BatchHandlerFunc
//     takes, wherever it is wired (see shapedHandlers).
//
// A call given to postgres.HandlerFunc or BatchHandlerFunc (a generic
// wrapper that decodes the payload) is looked into: the functions it is
// given that take a pgx.Tx are transactional handlers too, at any depth,
// and so are those a factory of the package returns (see
// factoryResults).
// So are the functions taking a pgx.Tx given to any function, of this
// package or another (a platform package's generic wrap.Typed(h.apply)),
// that returns a handler (an interface with a Handle or HandleBatch
// method): it can only call them with the transaction of the handler it
// builds.
//
// What it does not find: a handler built out of sight (returned by a
// function of another package, stored in a field), a plain consumer.Handler
// wired behind the Postgres claim in another package or through a
// middleware slice, and one reaching the transaction only through
// postgres.Tx in a function of another package.
//
// The store's savepoint batch mode runs these same handlers, so it needs
// no rule of its own.
type txHandler struct {
	node  ast.Node // *ast.FuncDecl or *ast.FuncLit
	ftype *ast.FuncType
	body  *ast.BlockStmt
	// ctx and tx are the handler's context and transaction: its
	// context.Context and pgx.Tx parameters, the context given to
	// postgres.Tx and the variable its transaction is assigned to.
	ctx, tx map[types.Object]bool
}

// txHandlers returns the package's transactional handlers, in source order.
func txHandlers(pass *analysis.Pass, decls *funcDecls) []*txHandler {
	var out []*txHandler
	byNode := map[ast.Node]*txHandler{}
	add := func(node ast.Node, ft *ast.FuncType, body *ast.BlockStmt) *txHandler {
		if h := byNode[node]; h != nil {
			return h
		}
		h := &txHandler{node: node, ftype: ft, body: body, ctx: map[types.Object]bool{}, tx: map[types.Object]bool{}}
		for _, field := range ft.Params.List {
			for _, name := range field.Names {
				obj := pass.TypesInfo.Defs[name]
				if obj == nil {
					continue
				}
				switch {
				case isNamed(obj.Type(), pathContext, "Context"):
					h.ctx[obj] = true
				case isNamed(obj.Type(), pathPgx, "Tx"):
					h.tx[obj] = true
				}
			}
		}
		byNode[node] = h
		out = append(out, h)
		return h
	}
	factories := map[*ast.FuncDecl]bool{}
	var addFunc func(arg ast.Expr)
	addFunc = func(arg ast.Expr) {
		switch a := ast.Unparen(arg).(type) {
		case *ast.CallExpr:
			// A wrapper (typed.Func(func(ctx, tx, v T) error {…})): the
			// functions it is given that take the transaction run in it.
			for _, inner := range a.Args {
				if takesTx(pass.TypesInfo.TypeOf(inner)) {
					addFunc(inner)
				}
			}
			// A factory of the package (priceUpdater(js, subject)): the
			// functions taking the transaction it returns run in it.
			for _, r := range factoryResults(pass, decls, a, factories) {
				addFunc(r)
			}
		case *ast.FuncLit:
			add(a, a.Type, a.Body)
		case *ast.Ident, *ast.SelectorExpr:
			var id *ast.Ident
			if sel, ok := a.(*ast.SelectorExpr); ok {
				id = sel.Sel
			} else {
				id = a.(*ast.Ident)
			}
			if node, ft, body := decls.body(pass.TypesInfo.Uses[id]); node != nil {
				add(node, ft, body)
			}
		}
	}
	for _, f := range pass.Files {
		var stack []ast.Node // enclosing functions
		var assign []*ast.AssignStmt
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return true
			}
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				stack = append(stack, n) // never popped: enclosing checks positions
			case *ast.AssignStmt:
				assign = append(assign, n)
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				switch {
				case fn == nil:
				case (isFunc(fn, pathPostgres, "HandlerFunc") || isFunc(fn, pathPostgres, "BatchHandlerFunc")) && len(n.Args) == 1:
					addFunc(n.Args[0])
				case (isMethod(fn, pathPostgres, "Store", "Process") || isMethod(fn, pathStore, "Store", "Process") ||
					isMethod(fn, pathPostgres, "Store", "ProcessBatch") || isMethod(fn, pathStore, "BatchStore", "ProcessBatch")) && len(n.Args) == 4:
					addFunc(n.Args[3])
				case isFunc(fn, pathConsumer, "New") && len(n.Args) >= 3 && behindPostgresClaim(pass, n.Args[3:]):
					for _, m := range claimedHandlers(pass, decls, n.Args[1]) {
						add(m, funcType(m), funcBody(m))
					}
				case isFunc(fn, pathConsumer, "Chain") && len(n.Args) >= 1 && behindPostgresClaim(pass, n.Args[1:]):
					for _, m := range claimedHandlers(pass, decls, n.Args[0]) {
						add(m, funcType(m), funcBody(m))
					}
				case returnsHandler(fn) && fn.Pkg() != nil && fn.Pkg().Path() != pathPostgres:
					// A wrapper of the team's (wrap.Typed(h.apply))
					// returning a handler: the functions it is given
					// that take a pgx.Tx run in the claim's transaction.
					for _, arg := range n.Args {
						if takesTx(pass.TypesInfo.TypeOf(arg)) {
							addFunc(arg)
						}
					}
				case isFunc(fn, pathPostgres, "Tx") && len(stack) > 0:
					encl := enclosing(stack, n)
					if encl == nil || discardsTx(n, assign) {
						break
					}
					h := add(encl, funcType(encl), funcBody(encl))
					if id, ok := ast.Unparen(n.Args[0]).(*ast.Ident); ok {
						if obj := pass.TypesInfo.Uses[id]; obj != nil {
							h.ctx[obj] = true
						}
					}
					for _, as := range assign {
						if len(as.Rhs) == 1 && ast.Unparen(as.Rhs[0]) == n && len(as.Lhs) >= 1 {
							if id, ok := as.Lhs[0].(*ast.Ident); ok {
								if obj := pass.TypesInfo.ObjectOf(id); obj != nil {
									h.tx[obj] = true
								}
							}
						}
					}
				}
			}
			return true
		})
	}
	for _, n := range shapedHandlers(pass) {
		add(n, funcType(n), funcBody(n))
	}
	for {
		routed := routedHandlers(pass, decls, out)
		if len(routed) == 0 {
			return out
		}
		for _, n := range routed {
			add(n, funcType(n), funcBody(n))
		}
	}
}

// enclosing returns the innermost function of stack whose body contains n.
func enclosing(stack []ast.Node, n ast.Node) ast.Node {
	for i := len(stack) - 1; i >= 0; i-- {
		if b := funcBody(stack[i]); b != nil && b.Pos() <= n.Pos() && n.End() <= b.End() {
			return stack[i]
		}
	}
	return nil
}

func funcBody(n ast.Node) *ast.BlockStmt {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Body
	case *ast.FuncLit:
		return n.Body
	}
	return nil
}

func funcType(n ast.Node) *ast.FuncType {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Type
	case *ast.FuncLit:
		return n.Type
	}
	return nil
}

// discardsTx reports whether the postgres.Tx call's transaction is assigned
// to the blank identifier (_, ok := postgres.Tx(ctx)): code that only asks
// whether it runs in a transaction is no handler.
func discardsTx(call *ast.CallExpr, assign []*ast.AssignStmt) bool {
	for _, as := range assign {
		if len(as.Rhs) == 1 && ast.Unparen(as.Rhs[0]) == call {
			id, ok := as.Lhs[0].(*ast.Ident)
			return ok && id.Name == "_"
		}
	}
	return false
}

// takesTx reports whether t is a function type with a pgx.Tx parameter.
func takesTx(t types.Type) bool {
	if t == nil {
		return false
	}
	sig, ok := t.Underlying().(*types.Signature)
	if !ok {
		return false
	}
	for p := range sig.Params().Variables() {
		if isNamed(p.Type(), pathPgx, "Tx") {
			return true
		}
	}
	return false
}

// behindPostgresClaim reports whether one of mws is visibly
// middleware.Idempotency given a *postgres.Store.
func behindPostgresClaim(pass *analysis.Pass, mws []ast.Expr) bool {
	for _, mw := range mws {
		call, ok := ast.Unparen(mw).(*ast.CallExpr)
		if ok && len(call.Args) == 1 && isFunc(callee(pass.TypesInfo, call), pathMiddleware, "Idempotency") &&
			isNamed(pass.TypesInfo.TypeOf(call.Args[0]), pathPostgres, "Store") {
			return true
		}
	}
	return false
}

// handleMethods returns the declarations of the Handle and HandleBatch
// methods of h's static type that the package declares.
func handleMethods(pass *analysis.Pass, decls *funcDecls, h ast.Expr) []*ast.FuncDecl {
	t := pass.TypesInfo.TypeOf(h)
	if t == nil {
		return nil
	}
	var out []*ast.FuncDecl
	for _, name := range [...]string{"Handle", "HandleBatch"} {
		obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, name)
		if fn, ok := obj.(*types.Func); ok {
			if decl := decls.decls[fn.Origin()]; decl != nil {
				out = append(out, decl)
			}
		}
	}
	return out
}

// factoryResults returns, when call is a call of a function or method of
// the package returning a function that takes a pgx.Tx (a handler
// factory, priceUpdater(js, subject) returning a closure over js), the
// values its return statements give that function result: function
// literals, method values, further factory calls. Each factory is looked
// into once (seen). A factory of another package, or a handler it keeps
// in a variable before returning it, is not looked into.
func factoryResults(pass *analysis.Pass, decls *funcDecls, call *ast.CallExpr, seen map[*ast.FuncDecl]bool) []ast.Expr {
	fn := callee(pass.TypesInfo, call)
	if fn == nil || fn.Pkg() != pass.Pkg {
		return nil
	}
	decl := decls.decls[fn.Origin()]
	res := fn.Type().(*types.Signature).Results()
	if decl == nil || seen[decl] || res.Len() == 0 {
		return nil
	}
	seen[decl] = true
	var out []ast.Expr
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its returns are its own
		case *ast.ReturnStmt:
			for i, r := range n.Results {
				if len(n.Results) == res.Len() && takesTx(res.At(i).Type()) {
					out = append(out, r)
				}
			}
		}
		return true
	})
	return out
}
