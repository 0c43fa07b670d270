package vet

import (
	"go/ast"
	"go/token"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
)

// callSite is the call in a transactional handler's own body through which
// TxEscape reached a helper of the package (a method, a closure, a function
// held by a field): a statement the helper runs outside the claim's
// transaction is reported there, on the line of the handler a reviewer
// changes, once per call, and the message names the helper's line. A nil
// callSite is the handler's body itself: the statement is reported where
// it is. A helper with a pgx.Tx parameter is given the transaction and is
// a handler in its own right: its statements are reported where they are,
// and the helpers it calls get call sites in it.
type callSite struct {
	pos  token.Pos
	done bool
}

// into returns the call site of a helper with signature ft reached
// through n: none for a helper taking a pgx.Tx, s itself once inside a
// helper, else a new site at n.
func (s *callSite) into(pass *analysis.Pass, n ast.Node, ft *ast.FuncType) *callSite {
	for _, p := range ft.Params.List {
		if isNamed(pass.TypesInfo.TypeOf(p.Type), pathPgx, "Tx") {
			return nil
		}
	}
	if s != nil {
		return s
	}
	return &callSite{pos: n.Pos()}
}

// report reports a statement at pos, which runs outside the claim's
// transaction, at the call site (see callSite). An //oncely:allow txescape
// comment at pos still silences it there.
func (s *callSite) report(pass *analysis.Pass, pos token.Pos, format string, args ...any) {
	if s == nil {
		report(pass, "txescape", pos, format, args...)
		return
	}
	if found, _ := allowComment(pass, "txescape", pos); found {
		report(pass, "txescape", pos, format, args...)
		return
	}
	if s.done {
		return
	}
	s.done = true
	p := pass.Fset.Position(pos)
	report(pass, "txescape", s.pos, format+" [at %s:%d]", append(args, filepath.Base(p.Filename), p.Line)...)
}
