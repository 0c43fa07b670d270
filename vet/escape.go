package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// Escape reports a goroutine, started in a transactional handler, that
// captures the handler's transaction or its context.
//
// The bug it prevents: the claim's transaction commits or rolls back when
// the handler returns, and the handler's context carries it (postgres.Tx).
// A goroutine holding either outlives that moment: its statements fail on a
// closed transaction, or — when it runs while the handler still does — race
// with the handler on a pgx.Tx, which is not safe for concurrent use (a
// corrupted connection, a lost batch). Work it does on other systems with
// the handler's context is not covered by the claim either: the handler can
// succeed and be acked while the goroutine's effect is lost, or fail and be
// retried while it still runs — a duplicate.
//
// Escape looks at each transactional handler (see TxEscape) and the
// functions of the same package it passes its transaction or context to. It
// follows the handler's context.Context and pgx.Tx parameters, the context
// given to postgres.Tx and the transaction it returns, and every variable
// derived from them (ctx2 := context.WithTimeout(ctx, …),
// context.WithoutCancel(ctx), which still carries the transaction); a go
// statement whose function, arguments or function literal body uses one of
// them is reported, unless it uses only the context and is joined (its
// function literal calls Done on a sync.WaitGroup the handler waits on
// after it, or closes or sends on a channel the handler receives from
// after it). Goroutines that use neither are not reported. The same holds
// for a channel send, and for the transaction in a function given to
// errgroup's or sync.WaitGroup's Go (joined, but sharing a pgx.Tx races).
//
// In the handler itself (not its helpers), it also reports the transaction
// or the context stored where it outlives the handler (see parksTx and
// storesTx): in a field or element of the receiver, a parameter or a
// captured variable, in a package-level variable, or in a sync.Map or an
// atomic reached from one, or in a field of a local pointer into such
// state (v := p.sessions.get(id); v.tx = tx; see outerAlias) — a background flusher or the next message then
// uses a transaction that has ended.
//
// A function given to time.AfterFunc that uses either is reported as well.
//
// Through the functions it calls (see paramFlows, computed on the SSA
// form and exported as facts for the module's packages), it also reports
// the transaction, a function using it, or a value holding it, given to a
// parameter that reaches another goroutine or is kept beyond the call: a
// scheduler's After that queues the function for its own goroutine, a
// worker pool's Submit sending it on a channel, a buffer's Add keeping
// the transaction for a background flush, a helper sharing it in an
// errgroup. The context is reported there only when it is stored (a
// goroutine using only the context may be joined in the callee). A store
// into the callee's receiver is fine when the receiver is a local of the
// handler (a per-message batch). What a component does with what the
// handler gave it (a worker pool's Submit sending it on a channel) is
// reported on the handler's call into the component (see
// escapeReporter).
//
// What it does not catch: the transaction reaching another goroutine
// through an interface method or a function value whose target is not
// visible, or through a function of a package outside the module (no
// facts: unknown, never proof); a store made by a same-package helper
// into its own receiver's receiver; a goroutine that only uses the
// context in another package's function.
var Escape = &analysis.Analyzer{
	Name: "escape",
	Doc:  "report goroutines and stores that let an oncely handler's transaction or context outlive it",
	URL:  "https://github.com/oncely/oncely/blob/main/docs/teams.md#oncely-vet",
	Run:  runEscape,
	// FactTypes: paramFlows, so that a transaction handed to a function of
	// another package of the module (a scheduler, a buffer) is followed.
	FactTypes: []analysis.Fact{new(paramFlows)},
}

func runEscape(pass *analysis.Pass) (any, error) {
	if pass.TypesInfo == nil || len(pass.Files) == 0 {
		return nil, nil // a dependency loaded from export data: no source, no facts
	}
	eng := newFlowEngine(pass)
	eng.exportFacts()
	if !imports(pass, pathPostgres) {
		return nil, nil
	}
	decls := newFuncDecls(pass)
	fc := &flowCheck{eng: eng, dyn: dynamicFields(pass), funcs: funcFields(pass), txFuncs: map[types.Object]bool{}, holdsTx: map[types.Object]bool{}, decls: decls}
	reported := map[ast.Node]bool{}
	rep := &escapeReporter{pass: pass, reported: reported}
	visited := map[ast.Node]bool{}
	var top ast.Node         // the handler being walked
	var recv *types.TypeName // its receiver's type
	var walk func(node ast.Node, body *ast.BlockStmt, tracked map[types.Object]bool, at ast.Node)
	walk = func(node ast.Node, body *ast.BlockStmt, tracked map[types.Object]bool, at ast.Node) {
		if body == nil || visited[node] {
			return
		}
		visited[node] = true
		derive(pass, body, tracked)
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				obj := uses(pass, n.Call, txsOf(tracked))
				if obj == nil && !joined(pass, n, body) {
					obj = uses(pass, n.Call, tracked)
				}
				if obj != nil {
					rep.report(n, at, useInside(pass, n, obj), "goroutine captures %s: it can outlive the handler and the claim's transaction (committed or rolled back when the handler returns), or race with the handler on it; finish the work before returning", fc.subject(obj))
				}
				return false
			case *ast.AssignStmt:
				if node != top {
					break
				}
				lhs, obj := parksTx(pass, n, node, body, tracked)
				if obj == nil {
					lhs, obj = parksInAlias(pass, decls, n, node, body, tracked)
				}
				if obj != nil && !reported[n] {
					reported[n] = true
					report(pass, "escape", n.Pos(), "the handler's %s %s is stored in %s, which outlives the handler: whoever reads it later (a flusher, the next message) uses a transaction that has ended, or races with the handler on it; keep it in the handler's locals", what(obj), obj.Name(), types.ExprString(lhs))
				}
			case *ast.SendStmt:
				if obj := uses(pass, n.Value, tracked); obj != nil {
					rep.report(n, at, nil, "%s is sent on a channel: whoever receives it can use it after the handler returned and the claim's transaction ended, or concurrently with the handler; finish the work before returning", fc.subject(obj))
				}
			case *ast.CallExpr:
				if node == top {
					if obj := storesTx(pass, n, node, body, tracked); obj != nil && !reported[n] {
						reported[n] = true
						report(pass, "escape", n.Pos(), "the handler's %s %s is stored in %s, which outlives the handler: whoever loads it later uses a transaction that has ended, or races with the handler on it; keep it in the handler's locals", what(obj), obj.Name(), types.ExprString(n.Fun))
					}
				}
				if obj := later(pass, n, tracked); obj != nil {
					rep.report(n, at, useInside(pass, n, obj), "the function given to %s uses the handler's %s %s: it runs later, in a goroutine of its own, after the handler returned and the claim's transaction ended; finish the work before returning", types.ExprString(n.Fun), what(obj), obj.Name())
				}
				if obj := groupGo(pass, n, tracked); obj != nil {
					rep.report(n, at, useInside(pass, n, obj), "a goroutine of %s uses the handler's transaction %s: a pgx.Tx is not safe for concurrent use, so goroutines sharing it race with each other and with the handler; run the statements in the handler's goroutine, or batch them (pgx.Batch)", types.ExprString(n.Fun), obj.Name())
				}
				if obj, p := fc.flowCall(pass, n, body, tracked); obj != nil {
					rep.report(n, at, nil, "the handler's %s %s, given to %s, %s: it is used after the handler returned and the claim's transaction ended, or concurrently with the handler; finish the work before returning", what(obj), obj.Name(), types.ExprString(n.Fun), flowMessage(p))
				}
				next, ft, nb := decls.body(calleeObj(pass, n))
				if next == nil || ft.Params == nil {
					break
				}
				params := paramObjs(pass, ft)
				inner := map[types.Object]bool{}
				for i, arg := range n.Args {
					if i < len(params) && params[i] != nil && uses(pass, arg, tracked) != nil {
						inner[params[i]] = true
						if uses(pass, arg, fc.txs(tracked)) != nil {
							fc.holdsTx[params[i]] = true
							if _, isFunc := params[i].Type().Underlying().(*types.Signature); isFunc {
								fc.txFuncs[params[i]] = true
							}
						}
					}
				}
				if len(inner) > 0 {
					walk(next, nb, inner, siteInto(n, at, calleeObj(pass, n), recv))
				}
			}
			return true
		})
	}
	for _, h := range txHandlers(pass, decls) {
		tracked := map[types.Object]bool{}
		for o := range h.ctx {
			tracked[o] = true
		}
		for o := range h.tx {
			tracked[o] = true
		}
		top, recv = h.node, handlerRecv(pass, h.node)
		walk(h.node, h.body, tracked, nil)
	}
	return nil, nil
}

// what names what a tracked object is: the handler's "transaction" or
// "context".
func what(obj types.Object) string {
	if isNamed(obj.Type(), pathPgx, "Tx") {
		return "transaction"
	}
	return "context"
}

// groupGo returns the tracked pgx.Tx that a function given to
// (*errgroup.Group).Go or (*sync.WaitGroup).Go uses, or nil. Such groups
// are joined before the handler returns, so the handler's context is fine
// to use there; its transaction is not, being unsafe for concurrent use.
func groupGo(pass *analysis.Pass, call *ast.CallExpr, tracked map[types.Object]bool) types.Object {
	fn := callee(pass.TypesInfo, call)
	if fn == nil || fn.Name() != "Go" || len(call.Args) != 1 ||
		!isMethod(fn, pathErrgroup, "Group", "Go") && !isMethod(fn, "sync", "WaitGroup", "Go") {
		return nil
	}
	return uses(pass, call.Args[0], txsOf(tracked))
}

// later returns the tracked object that the function given to
// time.AfterFunc uses, or nil: it runs in a goroutine of its own once the
// timer fires, after the handler returned.
func later(pass *analysis.Pass, call *ast.CallExpr, tracked map[types.Object]bool) types.Object {
	if fn := callee(pass.TypesInfo, call); fn == nil || !isFunc(fn, "time", "AfterFunc") || len(call.Args) != 2 {
		return nil
	}
	return uses(pass, call.Args[1], tracked)
}

// txsOf returns the pgx.Tx objects of tracked.
func txsOf(tracked map[types.Object]bool) map[types.Object]bool {
	txs := map[types.Object]bool{}
	for o := range tracked {
		if isNamed(o.Type(), pathPgx, "Tx") {
			txs[o] = true
		}
	}
	return txs
}

// joined reports whether the goroutine g started in body is joined before
// body goes on: its function literal calls Done on a sync.WaitGroup that
// body waits on (Wait) after the go statement, or closes or sends on a
// channel that body receives from (<-done) after it.
func joined(pass *analysis.Pass, g *ast.GoStmt, body *ast.BlockStmt) bool {
	lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit)
	if !ok {
		return false
	}
	groups := map[types.Object]bool{}
	chans := map[types.Object]bool{}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if obj := waitGroupCall(pass, n, "Done"); obj != nil {
			groups[obj] = true
		}
		switch n := n.(type) {
		case *ast.CallExpr: // close(done)
			if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok && len(n.Args) == 1 {
				if b, ok := pass.TypesInfo.Uses[id].(*types.Builtin); ok && b.Name() == "close" {
					if obj := identObj(pass, n.Args[0]); obj != nil {
						chans[obj] = true
					}
				}
			}
		case *ast.SendStmt: // done <- result
			if obj := identObj(pass, n.Chan); obj != nil {
				chans[obj] = true
			}
		}
		return true
	})
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if n != nil && n.Pos() > g.End() {
			if obj := waitGroupCall(pass, n, "Wait"); obj != nil && groups[obj] {
				found = true
			}
			if u, ok := n.(*ast.UnaryExpr); ok && u.Op == token.ARROW && chans[identObj(pass, u.X)] {
				found = true // <-done
			}
		}
		return !found
	})
	return found
}

// identObj returns the object x names when it is an identifier, or nil.
func identObj(pass *analysis.Pass, x ast.Expr) types.Object {
	if id, ok := ast.Unparen(x).(*ast.Ident); ok {
		return pass.TypesInfo.Uses[id]
	}
	return nil
}

// waitGroupCall returns the variable (or field) wg when n is the call
// wg.name() on a sync.WaitGroup, or nil.
func waitGroupCall(pass *analysis.Pass, n ast.Node, name string) types.Object {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !isMethod(callee(pass.TypesInfo, call), "sync", "WaitGroup", name) {
		return nil
	}
	switch x := ast.Unparen(sel.X).(type) {
	case *ast.Ident:
		return pass.TypesInfo.Uses[x]
	case *ast.SelectorExpr:
		return pass.TypesInfo.Uses[x.Sel]
	}
	return nil
}

// calleeObj returns the object a call's function expression refers to.
func calleeObj(pass *analysis.Pass, call *ast.CallExpr) types.Object {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return pass.TypesInfo.Uses[f]
	case *ast.SelectorExpr:
		return pass.TypesInfo.Uses[f.Sel]
	}
	return nil
}

// paramObjs returns the objects of ft's parameters, one per position (nil
// for blank or unnamed ones).
func paramObjs(pass *analysis.Pass, ft *ast.FuncType) []types.Object {
	var out []types.Object
	for _, field := range ft.Params.List {
		if len(field.Names) == 0 {
			out = append(out, nil)
		}
		for _, name := range field.Names {
			out = append(out, pass.TypesInfo.Defs[name])
		}
	}
	return out
}

// uses returns a tracked object that n refers to, or nil.
func uses(pass *analysis.Pass, n ast.Node, tracked map[types.Object]bool) types.Object {
	var found types.Object
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && found == nil {
			if obj := pass.TypesInfo.Uses[id]; obj != nil && tracked[obj] {
				found = obj
			}
		}
		return found == nil
	})
	return found
}

// useInside returns, as related information, where the goroutine started
// (or the function scheduled) by n first uses obj, when that is on a line
// after n's (its body): the reviewer sees both the start and the use. None
// otherwise.
func useInside(pass *analysis.Pass, n ast.Node, obj types.Object) []analysis.RelatedInformation {
	var at token.Pos
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok && !at.IsValid() && pass.TypesInfo.Uses[id] == obj {
			at = id.Pos()
		}
		return !at.IsValid()
	})
	if !at.IsValid() || pass.Fset.Position(at).Line == pass.Fset.Position(n.Pos()).Line {
		return nil
	}
	return []analysis.RelatedInformation{{Pos: at, Message: "the goroutine's use of " + obj.Name()}}
}

// derive adds to tracked the context.Context and pgx.Tx variables of body
// assigned from expressions that use a tracked object, until none is added.
func derive(pass *analysis.Pass, body *ast.BlockStmt, tracked map[types.Object]bool) {
	carries := func(obj types.Object) bool {
		return obj != nil && (isNamed(obj.Type(), pathContext, "Context") || isNamed(obj.Type(), pathPgx, "Tx"))
	}
	for changed := true; changed; {
		changed = false
		add := func(lhs []ast.Expr, rhs []ast.Expr) {
			for _, r := range rhs {
				if uses(pass, r, tracked) == nil {
					continue
				}
				for _, l := range lhs {
					if id, ok := l.(*ast.Ident); ok {
						if obj := pass.TypesInfo.ObjectOf(id); carries(obj) && !tracked[obj] {
							tracked[obj] = true
							changed = true
						}
					}
				}
			}
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				add(n.Lhs, n.Rhs)
			case *ast.ValueSpec:
				lhs := make([]ast.Expr, len(n.Names))
				for i, id := range n.Names {
					lhs[i] = id
				}
				add(lhs, n.Values)
			}
			return true
		})
	}
}
