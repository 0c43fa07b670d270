package vet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// TxEscape reports, inside a transactional handler, a statement sent through
// a database handle other than the handler's transaction.
//
// The bug it prevents: the idempotency claim and the handler's effects
// commit in one transaction, so a redelivered message finds the claim and
// does nothing. A write through the pool (or any connection but the claim's
// transaction) commits on its own: it survives the handler's failure and
// the claim's rollback, and runs again on every retry and redelivery — the
// duplicate effect oncely exists to prevent. A read through the pool (a
// constant SELECT through Query, QueryRow or their …Context forms whose
// text shows no side effect — no schema function, no lock, see
// selectWrites — a
// method that only reads: see selectCall, readsOnly) commits and repeats
// nothing and is not reported, though it does not see the transaction's
// uncommitted writes.
//
// Transactional handlers are the function given to postgres.HandlerFunc,
// postgres.BatchHandlerFunc or a Store's Process or ProcessBatch, and every
// function that calls postgres.Tx (see txHandler). Inside them, and in every function, method and closure of the
// same package they reference (followed transitively), TxEscape reports:
//
//   - a call of a method that executes statements, opens a transaction,
//     copies or sends a batch (Exec, Query, QueryRow, Begin, BeginTx,
//     CopyFrom, SendBatch, Prepare, and database/sql's …Context forms;
//     not a constant SELECT through Query or QueryRow, see selectCall) on
//     *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn, *sql.DB, *sql.Conn or
//     *sql.Stmt — except on the transaction's own connection (tx.Conn());
//
//   - such a handle passed where an interface with one of those methods is
//     expected (pgx.BeginFunc(ctx, pool, …), a helper taking a "querier"),
//     since the callee's statements then run outside the transaction;
//
//   - a call through a struct field bound to a handle wherever the package
//     sets it (see poolFields): an interface field holding the pool, a
//     stored method value (pool.Exec), generated query code built from the
//     pool (orderdb.New(pool)); also through a local assigned such a
//     field or handle (q := h.q), where a binding assignment reaches the
//     call (not after q = q.WithTx(tx); see localBinds);
//
//   - a call of a function of another package that runs statements
//     through such a handle itself (a repository method writing through
//     the pool it holds), known from the runsOutside fact that package's
//     analysis exported, also through an interface field whose dynamic
//     types the package shows (see dynamicFields: also a value an option
//     function binds) or a function field
//     holding one function (see funcFields); and a handler of
//     another package with such a Handle method, wired behind the Postgres
//     claim (see wiredHandlers);
//
//   - an effect outside the database (see outsideEffect): an HTTP request,
//     a produce to Kafka, a publish to RabbitMQ. The claim's rollback cannot
//     undo it; the fix is the outbox. A reviewed call that is idempotent on
//     the other side is marked //oncely:allow txescape REASON.
//
//   - a call through a field or package-level variable that another
//     package of the module binds to a handle (its boundToHandle fact: a
//     platform package's queries built from the pool in Init, a
//     dependencies struct built by a wiring package);
//
//   - a function field assigned several functions: the call is followed
//     into each of them, and reported if any runs outside; also a
//     function field, of this package's struct or another's, assigned
//     function literals without a pgx.Tx parameter (a dependencies struct
//     wired with closures over the pool, see litFields);
//
//   - a handler returned as an interface by a constructor of another
//     package (refunds.NewIssuer(pool) returning consumer.Handler) and
//     wired behind the Postgres claim, whose Handle runs outside (its
//     handlerRunsOutside fact);
//
//   - an effect through a function field or variable holding a client's
//     function or method (send: smtp.SendMail, var post = http.Post; see
//     funcFields and heldEffect);
//
//   - an effect through a client vet has no list for (see clientEffect:
//     a method of another module, taking a context, named as a write),
//     and through a function of the module that makes one (its hasEffect
//     fact: a notification client wrapping net/http).
//
// A statement TxEscape finds in a helper of the package the handler calls
// is reported on the line a reviewer changes (see callSite): where it is
// when the helper is the handler's own code (a method of the handler's
// receiver type, a function, a closure), naming the handler's call; on
// the handler's call into a component (a method of another type, the
// method of an interface field's dynamic type, a function held by a field,
// a helper the handler gives the pool), naming the statement's line. A
// function of another package (a repository writing through its pool, a
// client making an effect) is a component too: the report names the
// statement in that package from the fact's site, and points at it as
// related information where the file set has its file (see factSite). A
// helper given the pgx.Tx is a handler in its own right and its
// statements are reported where they are.
//
// What it does not catch: handlers it does not find (see txHandler); a
// handle given to the handler's constructor by another package (func
// New(db orderdb.DBTX) called with the pool by main); an unexported
// function of another package reached through a function value; client
// calls without a context or named otherwise (Do, Execute), and a
// client's read named as a write is reported; a chain that routes some
// messages around the claim (the run-time witness dead-letters them).
// docs/teams.md lists them with examples, measured on
// vet/testdata/src/corpus.
var TxEscape = &analysis.Analyzer{
	Name: "txescape",
	Doc:  "report statements sent outside the claim's transaction from a transactional oncely handler",
	URL:  "https://github.com/oncely/oncely/blob/main/docs/teams.md#oncely-vet",
	Run:  runTxEscape,
	// FactTypes: runsOutside, so that calls into other packages of the
	// module (a repository holding the pool) are followed.
	FactTypes: []analysis.Fact{new(runsOutside), new(handlerRunsOutside), new(boundToHandle), new(hasEffect), new(readsOnly)},
}

// dbMethods are the statement-running methods of the database handles.
var dbMethods = map[string]bool{
	"Exec": true, "Query": true, "QueryRow": true, "Begin": true, "BeginTx": true,
	"CopyFrom": true, "SendBatch": true, "Prepare": true,
	"ExecContext": true, "QueryContext": true, "QueryRowContext": true, "PrepareContext": true,
}

// dbHandle returns the name of the database handle type t is (such as
// "*pgxpool.Pool"), or "".
func dbHandle(t types.Type) string {
	for _, h := range [...]struct{ pkg, name, short string }{
		{pathPgxpool, "Pool", "*pgxpool.Pool"},
		{pathPgxpool, "Conn", "*pgxpool.Conn"},
		{pathPgx, "Conn", "*pgx.Conn"},
		{pathSQL, "DB", "*sql.DB"},
		{pathSQL, "Conn", "*sql.Conn"},
		{pathSQL, "Stmt", "*sql.Stmt"},
	} {
		if _, ptr := types.Unalias(t).(*types.Pointer); ptr && isNamed(t, h.pkg, h.name) {
			return h.short
		}
	}
	return ""
}

// queryingInterface reports whether t is an interface with a method that
// runs statements.
func queryingInterface(t types.Type) bool {
	it, ok := t.Underlying().(*types.Interface)
	if !ok {
		return false
	}
	for m := range it.Methods() {
		if dbMethods[m.Name()] {
			return true
		}
	}
	return false
}

func runTxEscape(pass *analysis.Pass) (any, error) {
	if pass.TypesInfo == nil || len(pass.Files) == 0 {
		return nil, nil // a dependency loaded from export data: no source, no facts
	}
	decls := newFuncDecls(pass)
	exportRunsOutside(pass, decls)
	exportReadsOnly(pass, decls)
	fields, locals := poolFields(pass)
	exportBoundFacts(pass, fields)
	exempt := redisLocks(pass) // the calls that are not effects: a lock, a scratch file
	scratchFiles(pass, exempt)
	exportEffects(pass, decls, exempt)
	if !imports(pass, pathPostgres) && !imports(pass, pathPgx) {
		return nil, nil // no handler: none is built here, none is given a pgx.Tx
	}
	reported := map[ast.Node]bool{}
	callOf := map[*ast.Ident]*ast.CallExpr{} // the calls of the functions named
	wiredHandlers(pass)
	dyn := dynamicFields(pass)
	funcs := funcFields(pass)
	lits := funcLitFields(pass)
	for _, h := range txHandlers(pass, decls) {
		visited := map[ast.Node]bool{}
		recv := handlerRecv(pass, h.node)
		var walk func(node ast.Node, body *ast.BlockStmt, via []string, at *callSite)
		walk = func(node ast.Node, body *ast.BlockStmt, via []string, at *callSite) {
			if visited[node] || body == nil {
				return
			}
			visited[node] = true
			ast.Inspect(body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Ident:
					obj := pass.TypesInfo.Uses[n]
					if next, ft, nb := decls.body(obj); next != nil {
						comp := component(obj, recv) || givesHandle(pass, callOf[n])
						walk(next, nb, append(via[:len(via):len(via)], obj.Name()), at.into(pass, n, ft, comp))
					}
				case *ast.CallExpr:
					switch f := ast.Unparen(n.Fun).(type) {
					case *ast.Ident:
						callOf[f] = n
					case *ast.SelectorExpr:
						callOf[f.Sel] = n
					}
					if readCall(pass, n, fields, decls) {
						return true
					}
					checkTxCall(pass, n, via, at, reported, fields, locals, exempt)
					for _, lit := range lits.of(pass, n) {
						walk(lit, lit.Body, append(via[:len(via):len(via)], types.ExprString(n.Fun)), at.into(pass, n, lit.Type, true))
					}
					ms := fieldFuncs(pass, n, funcs)
					if dm := dynamicMethods(pass, n, dyn); len(dm) > 0 {
						ms = dm
					}
					for _, m := range ms {
						if f := importedRunsOutside(pass, m); f != nil && !reported[n] {
							reported[n] = true
							at.reportAt(pass, n.Pos(), f.At, "%s runs statements outside the claim's transaction (the field holds %s.%s; %s; %s): they commit on their own and repeat on every redelivery; give it the handler's pgx.Tx", types.ExprString(n.Fun), m.Pkg().Name(), m.Name(), f.Via, txWhere(via))
						} else if f := importedEffect(pass, m); f != nil && !reported[n] {
							reported[n] = true
							at.reportAt(pass, n.Pos(), f.At, "%s is an effect outside the database (the field holds %s.%s; %s; %s): the claim's rollback cannot undo it, and it repeats on every redelivery; use the outbox, or mark a reviewed, idempotent call with //oncely:allow txescape REASON", types.ExprString(n.Fun), m.Pkg().Name(), m.Name(), f.Via, txWhere(via))
						} else if e := heldEffect(pass, m, n, exempt); e != "" && !reported[n] {
							reported[n] = true
							at.report(pass, n.Pos(), "%s is an effect outside the database (%s holds it; %s): the claim's rollback cannot undo it, and it repeats on every redelivery; use the outbox, or mark a reviewed, idempotent call with //oncely:allow txescape REASON", e, types.ExprString(n.Fun), txWhere(via))
						} else if next, ft, nb := decls.body(m); next != nil {
							walk(next, nb, append(via[:len(via):len(via)], m.Name()), at.into(pass, n, ft, true))
						}
					}
				}
				return true
			})
		}
		walk(h.node, h.body, nil, nil)
	}
	return nil, nil
}

// checkTxCall reports call when it sends a statement outside the handler's
// transaction; via names the helpers it was reached through, at the call
// of the handler they were reached from (nil in the handler itself).
func checkTxCall(pass *analysis.Pass, call *ast.CallExpr, via []string, at *callSite, reported map[ast.Node]bool, fields map[*types.Var]string, locals *localBinds, exempt map[*ast.CallExpr]bool) {
	where := txWhere(via)
	if name, h := poolFieldCall(pass, call, fields, locals); name != "" && !reported[call] {
		reported[call] = true
		at.report(pass, call.Pos(), "%s runs outside the claim's transaction (it is bound to %s; %s): it commits on its own and repeats on every redelivery; build it from the handler's pgx.Tx", name, h, where)
		return
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && dbMethods[sel.Sel.Name] && !selectCall(pass, call, sel.Sel.Name) {
		if s := pass.TypesInfo.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
			if h := dbHandle(s.Recv()); h != "" && !txConn(pass, sel.X) && !reported[call] {
				reported[call] = true
				at.report(pass, call.Pos(), "%s.%s runs outside the claim's transaction (%s): it commits on its own and repeats on every redelivery; use the handler's pgx.Tx (postgres.Tx(ctx))", h, sel.Sel.Name, where)
				return
			}
		}
	}
	if fn := callee(pass.TypesInfo, call); fn != nil && !reported[call] {
		if f := importedRunsOutside(pass, fn); f != nil {
			reported[call] = true
			at.reportAt(pass, call.Pos(), f.At, "%s.%s runs statements outside the claim's transaction (%s; %s): they commit on their own and repeat on every redelivery; give it the handler's pgx.Tx", fn.Pkg().Name(), fn.Name(), f.Via, where)
			return
		}
	}
	effect := outsideEffect(pass, call, exempt)
	if effect == "" {
		effect = clientEffect(pass, call)
	}
	var site factSite // the effect's call in another package
	if fn := callee(pass.TypesInfo, call); effect == "" && fn != nil {
		if f := importedEffect(pass, fn); f != nil {
			effect = fn.Pkg().Name() + "." + fn.Name() + " (" + f.Via + ")"
			site = f.At
		}
	}
	if effect != "" && !reported[call] {
		reported[call] = true
		at.reportAt(pass, call.Pos(), site, "%s is an effect outside the database (%s): the claim's rollback cannot undo it, and it repeats on every redelivery; use the outbox (write the message in the handler's transaction), or mark a reviewed, idempotent call with //oncely:allow txescape REASON", effect, where)
		return
	}
	if tv := pass.TypesInfo.Types[call.Fun]; tv.IsType() || tv.IsBuiltin() {
		return // a conversion or a builtin
	}
	sig, ok := pass.TypesInfo.TypeOf(call.Fun).Underlying().(*types.Signature)
	if !ok {
		return
	}
	for i, arg := range call.Args {
		var pt types.Type
		switch {
		case sig.Variadic() && i >= sig.Params().Len()-1:
			pt = sig.Params().At(sig.Params().Len() - 1).Type()
			if call.Ellipsis == 0 {
				pt = pt.(*types.Slice).Elem()
			}
		case i < sig.Params().Len():
			pt = sig.Params().At(i).Type()
		default:
			continue
		}
		if h := dbHandle(pass.TypesInfo.TypeOf(arg)); h != "" && queryingInterface(pt) && !reported[arg] {
			reported[arg] = true
			at.report(pass, arg.Pos(), "%s passed as %s runs the callee's statements outside the claim's transaction (%s); pass the handler's pgx.Tx", h, types.TypeString(pt, func(p *types.Package) string { return p.Name() }), where)
		}
	}
}

// txWhere says where a call is: in the handler, or in the helpers via.
func txWhere(via []string) string {
	if len(via) > 0 {
		return "reached from a transactional handler through " + strings.Join(via, " → ")
	}
	return "in a transactional handler"
}

// txConn reports whether x is tx.Conn() for a pgx.Tx: the transaction's own
// connection, whose statements run inside it.
func txConn(pass *analysis.Pass, x ast.Expr) bool {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := callee(pass.TypesInfo, call)
	return fn != nil && fn.Name() == "Conn" && isMethod(fn, pathPgx, "Tx", "Conn")
}

// heldEffect returns the effect outside the database that call makes by
// running fn, a function of another package held by the field or
// variable it calls (send: smtp.SendMail, var post = http.Post), or "".
// The call's arguments are fn's own: a held method value's receiver is
// bound.
//
// What it does not catch: a client function given to the handler as a
// parameter or set by another package (the field's value is not seen),
// and a field also assigned a function literal that wraps the client in
// another package.
func heldEffect(pass *analysis.Pass, fn *types.Func, call *ast.CallExpr, exempt map[*ast.CallExpr]bool) string {
	if fn.Pkg() == nil || fn.Pkg() == pass.Pkg {
		return ""
	}
	if e := effectOf(pass, fn, call, exempt); e != "" {
		return e
	}
	return clientEffectOf(pass, fn, call)
}
