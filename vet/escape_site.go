package vet

import (
	"go/ast"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
)

// escapeReporter places Escape's reports on the line a reviewer changes,
// as TxEscape's callSite does: what the handler's own code does (the
// handler, a method of its receiver's type, a function or closure of the
// package) is reported where it is; what a component does with what the
// handler gave it — a method of another type, such as a worker pool's
// Submit or a projector's Enqueue sending whatever it is given on a
// channel — is reported on the handler's call into the component, where
// the transaction or context leaves the handler, with the statement
// inside the component as related information. A component on its own
// is not the bug: its other callers may give it nothing of a handler's.
// An //oncely:allow escape comment on the statement silences it too.
type escapeReporter struct {
	pass     *analysis.Pass
	reported map[ast.Node]bool
}

// report reports n (a go statement, a send, a call) with format, at n
// when at is nil, else once at at, the handler's call into the
// component holding n, naming n's line.
func (r *escapeReporter) report(n, at ast.Node, related []analysis.RelatedInformation, format string, args ...any) {
	if r.reported[n] || at != nil && r.reported[at] {
		return
	}
	r.reported[n] = true
	if found, _ := allowComment(r.pass, "escape", n.Pos()); at == nil || found {
		reportRelated(r.pass, "escape", n.Pos(), related, format, args...)
		return
	}
	r.reported[at] = true
	by := "the component"
	if call, ok := at.(*ast.CallExpr); ok {
		by = types.ExprString(call.Fun)
	}
	p := r.pass.Fset.Position(n.Pos())
	related = append([]analysis.RelatedInformation{{Pos: n.Pos(), Message: "where the component lets it escape"}}, related...)
	reportRelated(r.pass, "escape", at.Pos(), related, format+" [handed over to %s here; it escapes at %s:%d]", append(args, by, filepath.Base(p.Filename), p.Line)...)
}

// siteInto returns the handler's call under which Escape walks into the
// function obj through call: at when already inside a component; call
// when obj is a component (see component) of the handler whose receiver's
// type is recv; nil for the handler's own code.
func siteInto(call, at ast.Node, obj types.Object, recv *types.TypeName) ast.Node {
	switch {
	case at != nil:
		return at
	case component(obj, recv):
		return call
	}
	return nil
}

// subject names a tracked object for a report: the handler's transaction
// or context, or a parameter a component was given one through (a
// function value holding a closure that uses it, a value holding it).
func (fc *flowCheck) subject(obj types.Object) string {
	if isNamed(obj.Type(), pathPgx, "Tx") || isNamed(obj.Type(), pathContext, "Context") {
		return "the handler's " + what(obj) + " " + obj.Name()
	}
	held := "context"
	if fc.holdsTx[obj] {
		held = "transaction"
	}
	if _, isFunc := obj.Type().Underlying().(*types.Signature); isFunc {
		return obj.Name() + ", a closure using the handler's " + held + ","
	}
	return obj.Name() + ", a value holding the handler's " + held + ","
}
