package vet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// runsOutside is TxEscape's fact about a function: its statements run
// through a database handle other than a transaction it is given (Via
// names the handle and the call), directly or through functions of its
// package or of packages it imports. A transactional handler that calls it
// from another package sends those statements outside the claim's
// transaction: a repository method writing through the pool it holds.
// At is the statement (see factSite).
type runsOutside struct {
	Via string
	At  factSite
}

// AFact marks runsOutside as an analysis fact.
func (*runsOutside) AFact() {}

func (f *runsOutside) String() string { return "runsOutside(" + f.Via + ")" }

// exportRunsOutside exports a runsOutside fact for each exported function
// and method of the package that runs statements through a database handle
// (see dbHandle), itself, through a function of the package, or through a
// function of another package that has the fact. oncely's own packages,
// which manage their connections by design, and the drivers (pgx,
// database/sql), whose handles TxEscape judges by type, export none.
func exportRunsOutside(pass *analysis.Pass, decls *funcDecls) {
	path := pass.Pkg.Path()
	if (path == pathModule || strings.HasPrefix(path, pathModule+"/")) && !strings.Contains(path, "/examples/") ||
		path == pathSQL || strings.HasPrefix(path, "github.com/jackc/pgx/") {
		return // the drivers' own methods are judged by their receiver (see dbHandle)
	}
	via := reachVia(pass, decls, func(call *ast.CallExpr) string {
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && dbMethods[sel.Sel.Name] && !selectCall(pass, call, sel.Sel.Name) {
			if s := pass.TypesInfo.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
				if h := dbHandle(s.Recv()); h != "" && !txConn(pass, sel.X) {
					return h + "." + sel.Sel.Name
				}
			}
		}
		return ""
	}, func(fn *types.Func) route {
		if f := importedRunsOutside(pass, fn); f != nil {
			return route(*f)
		}
		return route{}
	})
	for fn := range decls.decls {
		if !fn.Exported() {
			continue // other packages cannot call it
		}
		if r := via(fn); r.Via != "" {
			pass.ExportObjectFact(fn, &runsOutside{Via: r.Via, At: r.At})
		}
	}
	exportHandlerFacts(pass, decls, func(fn *types.Func) string { return via(fn).Via })
}

// reachVia returns a function telling how a function of decls reaches what
// direct finds in a call: no route (Via "") when it does not; direct's
// answer for a call in its body, at that call; or "name → how" through the
// first call of a function of the package that does, or of another
// package's function whose fact imported reports (its route), at the
// statement that route ends on. Answers are memoised; a cycle counts as
// not reaching.
func reachVia(pass *analysis.Pass, decls *funcDecls, direct func(*ast.CallExpr) string, imported func(*types.Func) route) func(*types.Func) route {
	memo := map[*types.Func]route{}
	var via func(fn *types.Func) route
	via = func(fn *types.Func) route {
		if r, ok := memo[fn]; ok {
			return r
		}
		memo[fn] = route{} // cycles: assume not
		decl := decls.decls[fn]
		if decl == nil {
			return route{}
		}
		var found route
		ast.Inspect(decl.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found.Via != "" {
				return found.Via == ""
			}
			if v := direct(call); v != "" {
				found = route{Via: v, At: siteOf(pass, call.Pos())}
				return false
			}
			if next := callee(pass.TypesInfo, call); next != nil {
				var r route
				if next.Pkg() == pass.Pkg {
					r = via(next.Origin())
				} else {
					r = imported(next)
				}
				if r.Via != "" {
					found = route{Via: next.Name() + " → " + r.Via, At: r.At}
				}
			}
			return found.Via == ""
		})
		memo[fn] = found
		return found
	}
	return via
}

// importedRunsOutside returns fn's runsOutside fact when fn is declared in
// another package, or nil.
func importedRunsOutside(pass *analysis.Pass, fn *types.Func) *runsOutside {
	if fn.Pkg() == nil || fn.Pkg() == pass.Pkg {
		return nil
	}
	var f runsOutside
	if pass.ImportObjectFact(fn.Origin(), &f) {
		return &f
	}
	return nil
}

// wiredHandlers reports a handler of another package given to consumer.New
// or consumer.Chain beside middleware.Idempotency of a *postgres.Store
// whose Handle or HandleBatch method runs statements outside a
// transaction it is given (its runsOutside fact): behind the Postgres
// claim, the claim's transaction is in the method's context, and a write
// through the pool commits on its own. A handler whose static type is an
// interface (a constructor returning consumer.Handler) is not seen
// through.
func wiredHandlers(pass *analysis.Pass) {
	assigned := map[*types.Var][]ast.Expr{}
	eachVarAssignment(pass, func(id *ast.Ident, value ast.Expr) {
		if v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var); ok {
			assigned[v] = append(assigned[v], value)
		}
	})
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := callee(pass.TypesInfo, call)
			var h ast.Expr
			switch {
			case fn == nil:
			case isFunc(fn, pathConsumer, "New") && len(call.Args) >= 3 && behindPostgresClaim(pass, call.Args[3:]):
				h = call.Args[1]
			case isFunc(fn, pathConsumer, "Chain") && len(call.Args) >= 1 && behindPostgresClaim(pass, call.Args[1:]):
				h = call.Args[0]
			}
			if h == nil {
				return true
			}
			if fn, fact := wiredHandlerFact(pass, h, assigned); fact != nil {
				report(pass, "txescape", h.Pos(), "the handler %s.%s returns runs statements outside the claim's transaction (%s), and it is wired behind middleware.Idempotency with the Postgres store: they commit on their own and repeat on every redelivery; write through the claim's transaction (postgres.Tx(ctx))", fn.Pkg().Name(), fn.Name(), fact.Via)
				return true
			}
			t := pass.TypesInfo.TypeOf(h)
			if t == nil || types.IsInterface(t) {
				return true
			}
			for _, name := range [...]string{"Handle", "HandleBatch"} {
				obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, name)
				m, ok := obj.(*types.Func)
				if !ok {
					continue
				}
				if fact := importedRunsOutside(pass, m); fact != nil {
					report(pass, "txescape", h.Pos(), "%s.%s of package %s runs statements outside the claim's transaction (%s), and it is wired behind middleware.Idempotency with the Postgres store: they commit on their own and repeat on every redelivery; write through the claim's transaction (postgres.Tx(ctx))", types.TypeString(t, types.RelativeTo(pass.Pkg)), name, m.Pkg().Name(), fact.Via)
					break
				}
			}
			return true
		})
	}
}
