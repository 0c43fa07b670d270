package vet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// dbReads are the statement-running methods that read when their SQL is
// a SELECT (see selectCall). A read through the pool commits nothing and
// repeats nothing a redelivery could duplicate: TxEscape does not report it
// (rates cached in a table, read from the pool by design).
var dbReads = map[string]bool{
	"Query": true, "QueryRow": true, "QueryContext": true, "QueryRowContext": true,
}

// selectCall reports whether call is a query method (see dbReads) given,
// as its SQL, a constant whose first word, after comments, is SELECT, and
// whose text shows no side effect (see selectWrites). Other SQL (INSERT …
// RETURNING, a CTE) or SQL built at run time may write, and a SELECT run
// through Exec, its rows discarded, runs for its side effects (pg_notify,
// setval). A prepared *sql.Stmt is judged by the SQL it was prepared
// with (see stmtRead).
func selectCall(pass *analysis.Pass, call *ast.CallExpr, method string) bool {
	if !dbReads[method] {
		return false
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && isNamed(pass.TypesInfo.TypeOf(sel.X), pathSQL, "Stmt") {
		return stmtRead(pass, call, method) // its SQL is where it was prepared
	}
	for _, a := range call.Args {
		tv := pass.TypesInfo.Types[a]
		if b, ok := tv.Type.Underlying().(*types.Basic); !ok || b.Info()&types.IsString == 0 {
			continue
		}
		return readSQL(tv)
	}
	return false
}

// stripSQLComments returns sql without its leading comments (-- to the end
// of the line, /* … */): the name line sqlc generates.
func stripSQLComments(sql string) string {
	for {
		sql = strings.TrimSpace(sql)
		switch {
		case strings.HasPrefix(sql, "--"):
			_, rest, _ := strings.Cut(sql, "\n")
			sql = rest
		case strings.HasPrefix(sql, "/*"):
			_, rest, _ := strings.Cut(sql, "*/")
			sql = rest
		default:
			return sql
		}
	}
}

// readsOnly is TxEscape's fact about an exported function or method that
// runs statements only to read: it runs at least one, and every
// statement-running call in its body, and in the functions of its package
// it calls, is a SELECT (see selectCall) on a database handle or an
// interface that runs statements (generated query code's GetX over the
// handle it is built from). It makes no effect outside the database and
// calls no function of another package with a runsOutside or hasEffect
// fact. A call of it through a value bound to the pool is a read, and is
// not reported.
type readsOnly struct{}

// AFact marks readsOnly as an analysis fact.
func (*readsOnly) AFact() {}

func (*readsOnly) String() string { return "readsOnly" }

// exportReadsOnly exports readsOnly for the package's exported functions
// and methods that only read.
func exportReadsOnly(pass *analysis.Pass, decls *funcDecls) {
	if path := pass.Pkg.Path(); path == pathSQL || strings.HasPrefix(path, "github.com/jackc/pgx/") {
		return // the drivers' own methods are judged by their receiver (see dbHandle)
	}
	for fn, decl := range decls.decls {
		if fn.Exported() && onlyReads(pass, decls, decl.Body) {
			pass.ExportObjectFact(fn, &readsOnly{})
		}
	}
}

// onlyReads reports whether body, with the functions of the package it
// calls, runs at least one statement, every one a read, and nothing else
// TxEscape reports.
func onlyReads(pass *analysis.Pass, decls *funcDecls, body *ast.BlockStmt) bool {
	reads, other := 0, false
	seen := map[*ast.BlockStmt]bool{}
	var visit func(b *ast.BlockStmt)
	visit = func(b *ast.BlockStmt) {
		if seen[b] {
			return
		}
		seen[b] = true
		ast.Inspect(b, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || other {
				return !other
			}
			if outsideEffect(pass, call, nil) != "" || clientEffect(pass, call) != "" {
				other = true
				return false
			}
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && dbMethods[sel.Sel.Name] {
				if t := pass.TypesInfo.TypeOf(sel.X); t != nil && (dbHandle(t) != "" || queryingInterface(t)) {
					if selectCall(pass, call, sel.Sel.Name) {
						reads++
					} else {
						other = true
					}
					return !other
				}
			}
			if fn := callee(pass.TypesInfo, call); fn != nil {
				if fn.Pkg() == pass.Pkg {
					if decl := decls.decls[fn.Origin()]; decl != nil {
						visit(decl.Body)
					}
				} else if importedRunsOutside(pass, fn) != nil || importedEffect(pass, fn) != nil {
					other = true
				}
			}
			return !other
		})
	}
	visit(body)
	return reads > 0 && !other
}

// readCall reports whether call only reads: a SELECT (see selectCall)
// through a handle, an interface that runs statements or a value bound to
// one, also through a read method value bound to the pool
// (h.queryRow(ctx, "SELECT …")), or a call of a function that only reads
// (its readsOnly fact, or its body in this package).
func readCall(pass *analysis.Pass, call *ast.CallExpr, fields map[*types.Var]string, decls *funcDecls) bool {
	fun := ast.Unparen(call.Fun)
	var v *types.Var
	switch f := fun.(type) {
	case *ast.Ident:
		v, _ = pass.TypesInfo.Uses[f].(*types.Var)
	case *ast.SelectorExpr:
		v, _ = pass.TypesInfo.Uses[f.Sel].(*types.Var)
		if s := pass.TypesInfo.Selections[f]; s != nil && s.Kind() == types.MethodVal && selectCall(pass, call, f.Sel.Name) &&
			(dbHandle(s.Recv()) != "" || queryingInterface(s.Recv())) {
			return true
		}
	}
	if v != nil {
		h := fields[v]
		_, method, ok := strings.Cut(h, ".")
		return ok && selectCall(pass, call, method)
	}
	fn := callee(pass.TypesInfo, call)
	if fn == nil {
		return false
	}
	if fn.Pkg() != pass.Pkg {
		return fn.Pkg() != nil && pass.ImportObjectFact(fn.Origin(), new(readsOnly))
	}
	decl := decls.decls[fn.Origin()]
	return decl != nil && onlyReads(pass, decls, decl.Body)
}
