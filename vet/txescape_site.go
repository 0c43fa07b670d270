package vet

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
)

// callSite is the call through which TxEscape reached a helper of the
// package from a transactional handler; where a statement the helper runs
// outside the claim's transaction is reported depends on what the helper
// is, so that the report lands on the line a reviewer changes:
//
//   - the handler's own code — a method of the handler's receiver type
//     (s.putPlan(ctx, …) from s.handleBatch), a function without a
//     receiver, a closure in a variable — is part of the handler: the
//     statement is reported where it is (the http.Do, the pool.Exec in
//     the helper), naming the handler's call, given as related
//     information;
//   - a component — a method of another type (a repository's
//     s.ledger.credit, the method of an interface field's dynamic type,
//     the publisher's Publish), a function held by a field, a helper the
//     handler gives a database handle (audit(ctx, h.pool, id)) — is
//     correct on its own: the handler's use of it is the bug, so the statement is
//     reported on the call into it, once per call, naming the statement's
//     line (also as related information). A component reached from the
//     handler's own helper is reported on the helper's call into it.
//
// A nil callSite is the handler's body itself: the statement is reported
// where it is. A helper with a pgx.Tx parameter is given the transaction
// and is a handler in its own right: its statements are reported where
// they are, and the helpers it calls get call sites in it.
type callSite struct {
	pos  token.Pos
	own  bool // the helper is the handler's own code: report at the statement
	done bool
}

// into returns the call site of a helper with signature ft reached
// through n (component: a method of another type or a function held by a
// field): none for a helper taking a pgx.Tx; s itself inside a component;
// else a new site at n, of the handler's own code unless component.
func (s *callSite) into(pass *analysis.Pass, n ast.Node, ft *ast.FuncType, component bool) *callSite {
	for _, p := range ft.Params.List {
		if isNamed(pass.TypesInfo.TypeOf(p.Type), pathPgx, "Tx") {
			return nil
		}
	}
	switch {
	case s != nil && !s.own:
		return s
	case s != nil && !component:
		return s // still the handler's own code, called from s.pos
	}
	return &callSite{pos: n.Pos(), own: !component}
}

// report reports a statement at pos, which runs outside the claim's
// transaction, where the call site says (see callSite). An
// //oncely:allow txescape comment at pos silences it.
func (s *callSite) report(pass *analysis.Pass, pos token.Pos, format string, args ...any) {
	s.reportAt(pass, pos, factSite{}, format, args...)
}

// reportAt is report for a call at pos into a function of another package
// that runs the statement at site (none when site has no file): the
// message names the site, and the report points at it as related
// information where the file set has it (see factSite).
func (s *callSite) reportAt(pass *analysis.Pass, pos token.Pos, site factSite, format string, args ...any) {
	var remote []analysis.RelatedInformation
	if site.File != "" {
		format += " [the statement at %s]"
		args = append(args, site.String())
		remote = site.related(pass, "the statement the call runs, in its own package")
	}
	if s == nil {
		reportRelated(pass, "txescape", pos, remote, format, args...)
		return
	}
	if s.own {
		p := pass.Fset.Position(s.pos)
		reportRelated(pass, "txescape", pos, append([]analysis.RelatedInformation{{Pos: s.pos, Message: "the transactional handler's call"}}, remote...),
			format+" [from the handler's call at %s:%d]", append(args, filepath.Base(p.Filename), p.Line)...)
		return
	}
	if found, _ := allowComment(pass, "txescape", pos); found {
		reportRelated(pass, "txescape", pos, remote, format, args...)
		return
	}
	if s.done {
		return
	}
	s.done = true
	p := pass.Fset.Position(pos)
	reportRelated(pass, "txescape", s.pos, append([]analysis.RelatedInformation{{Pos: pos, Message: "the statement outside the claim's transaction"}}, remote...),
		format+" [at %s:%d]", append(args, filepath.Base(p.Filename), p.Line)...)
}

// component reports whether obj, a function of the package reached by
// name from a handler whose receiver's type is recv (nil for a function
// or literal outside any method), is a component rather than the
// handler's own code (see callSite): a method of another type.
func component(obj types.Object, recv *types.TypeName) bool {
	fn, ok := obj.(*types.Func)
	if !ok {
		return false // a closure in a variable
	}
	r := fn.Type().(*types.Signature).Recv()
	return r != nil && recvName(r.Type()) != recv
}

// givesHandle reports whether one of call's arguments is a database
// handle (see dbHandle): the helper runs its statements through what the
// handler gives it, and the handler's argument is the line to change.
func givesHandle(pass *analysis.Pass, call *ast.CallExpr) bool {
	if call == nil {
		return false
	}
	for _, a := range call.Args {
		if dbHandle(pass.TypesInfo.TypeOf(a)) != "" {
			return true
		}
	}
	return false
}

// recvName returns the type name of a receiver type (T or *T), or nil.
func recvName(t types.Type) *types.TypeName {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Origin().Obj()
	}
	return nil
}

// handlerRecv returns the type name of the receiver of the method that is
// the handler node or holds it (a closure a method returns), or nil.
func handlerRecv(pass *analysis.Pass, node ast.Node) *types.TypeName {
	for _, f := range pass.Files {
		if node.Pos() < f.FileStart || node.Pos() > f.FileEnd {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || node.Pos() < fd.Pos() || node.End() > fd.End() {
				continue
			}
			if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
				return recvName(fn.Type().(*types.Signature).Recv().Type())
			}
		}
	}
	return nil
}
