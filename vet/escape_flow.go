package vet

// The routes by which a handler's transaction reaches another goroutine, or
// is retained, through a function it calls: see Escape and paramFlows.

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// flowCheck holds what Escape needs to follow a handler's calls into the
// functions they call: the package's SSA flows, its fields whose dynamic
// type or function value is visible, and the function-typed variables
// known to hold a function that uses the transaction.
type flowCheck struct {
	eng     *flowEngine
	dyn     map[*types.Var][]types.Type
	funcs   map[*types.Var][]*types.Func
	txFuncs map[types.Object]bool
	holdsTx map[types.Object]bool // parameters given a value using the transaction
	decls   *funcDecls
}

// flowCall returns the tracked object an argument of call hands to a
// parameter that reaches another goroutine or is retained beyond the
// call, with the parameter's flow, or nil. The transaction (or a function
// using it) is reported for any flow; the context only when it is stored
// (a goroutine that only uses the context may be joined in the callee).
// A store into the callee's receiver is reported when the receiver
// outlives the handler (not a local of body). A function of this package
// given the transaction directly is left to the walk into it, which
// reports the go statement or send there; its stores are reported here.
func (fc *flowCheck) flowCall(pass *analysis.Pass, call *ast.CallExpr, body *ast.BlockStmt, tracked map[types.Object]bool) (types.Object, paramFlow) {
	if fc.eng == nil || len(call.Args) == 0 {
		return nil, paramFlow{}
	}
	txs := fc.txs(tracked)
	for _, fn := range fc.callees(pass, call) {
		for k, arg := range call.Args {
			arg = fc.literal(pass, arg)
			obj := uses(pass, arg, txs)
			isTx := obj != nil
			if !isTx {
				obj = ctxArg(pass, arg, tracked)
			}
			if obj == nil {
				continue
			}
			p, ok := fc.eng.argFlow(fn, k)
			if !ok {
				continue
			}
			_, lit := ast.Unparen(arg).(*ast.FuncLit)
			switch {
			case p.Kind == flowGoroutine && !isTx:
				continue
			case p.Kind == flowGoroutine && fn.Pkg() == pass.Pkg && !lit:
				continue // the walk into fn reports it
			case p.Kind == flowStoredRecv && localReceiver(pass, call, body):
				continue
			}
			return obj, p
		}
	}
	return nil, paramFlow{}
}

// txs returns the tracked transactions and the tracked functions known to
// use one.
func (fc *flowCheck) txs(tracked map[types.Object]bool) map[types.Object]bool {
	txs := txsOf(tracked)
	for o := range fc.txFuncs {
		if tracked[o] {
			txs[o] = true
		}
	}
	return txs
}

// literal returns the function literal a local variable arg holds (record
// := func() {…}; pool.Submit(record)), or arg.
func (fc *flowCheck) literal(pass *analysis.Pass, arg ast.Expr) ast.Expr {
	if id, ok := ast.Unparen(arg).(*ast.Ident); ok {
		if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && fc.decls.lits[v] != nil {
			return fc.decls.lits[v]
		}
	}
	return arg
}

// callees returns the functions call may run: its static callee, or the
// methods and functions a field of the package is seen to hold.
func (fc *flowCheck) callees(pass *analysis.Pass, call *ast.CallExpr) []*types.Func {
	if ms := dynamicMethods(pass, call, fc.dyn); len(ms) > 0 {
		return ms
	}
	if fs := fieldFuncs(pass, call, fc.funcs); len(fs) > 0 {
		return fs
	}
	if fn := callee(pass.TypesInfo, call); fn != nil && !types.IsInterface(recvType(fn)) {
		return []*types.Func{fn}
	}
	return nil
}

// recvType returns the type of fn's receiver, or nil.
func recvType(fn *types.Func) types.Type {
	if r := fn.Type().(*types.Signature).Recv(); r != nil {
		return r.Type()
	}
	return types.Typ[types.Invalid]
}

// ctxArg returns the tracked context that arg is, or that a function
// literal arg uses, or nil.
func ctxArg(pass *analysis.Pass, arg ast.Expr, tracked map[types.Object]bool) types.Object {
	switch a := ast.Unparen(arg).(type) {
	case *ast.Ident:
		if obj := pass.TypesInfo.Uses[a]; tracked[obj] {
			return obj
		}
	case *ast.FuncLit:
		return uses(pass, a.Body, tracked)
	}
	return nil
}

// localReceiver reports whether call is a method call on a variable
// declared in body (a buffer or unit of work of the handler's own, which
// ends with it).
func localReceiver(pass *analysis.Pass, call *ast.CallExpr, body *ast.BlockStmt) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return false
	}
	obj, ok := pass.TypesInfo.Uses[id].(*types.Var)
	return ok && obj.Pos() >= body.Pos() && obj.Pos() < body.End()
}

// flowMessage describes p for a report.
func flowMessage(p paramFlow) string {
	switch p.Kind {
	case flowGoroutine:
		return "reaches another goroutine (" + p.Via + ")"
	case flowStoredRecv:
		return "is kept by the receiver, which outlives the handler (" + p.Via + ")"
	}
	return "is stored beyond the call (" + p.Via + ")"
}
