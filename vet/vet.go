// Package vet holds oncely's static checks, built on
// golang.org/x/tools/go/analysis: mistakes that at-least-once delivery turns
// into duplicated or lost effects, caught before production. Each analyzer
// has its own file and documents the bug it prevents:
//
//   - TxEscape: a write or query through a database handle other than the
//     handler's transaction, inside a transactional handler (also through
//     fields and locals bound to the pool, functions of other packages,
//     and handlers of other packages wired behind the Postgres claim,
//     also when a constructor returns them as consumer.Handler; fields
//     and variables bound to the pool in another package; functions given
//     to a wrapper that returns a handler, plain functions and handlers
//     in interface variables behind the claim, functions a handler
//     factory returns, routes a handler runs through a function value,
//     fields set through an option function or a setter; reported where
//     the statement is in the handler's own helpers, on the handler's call
//     into a component; a constant SELECT is a read), and an effect
//     outside the database there (an HTTP request, a produce or publish,
//     a Redis write, a gRPC call, a write-named call of another client
//     with a context, a function of the module that makes one, a
//     function field or variable holding a client's function).
//   - NoDedupe: consumer.New with no idempotency middleware and no explicit
//     Config.Duplicates opt-out (also a chain kept in a struct field of the
//     package, and a route table's entry given its own consumer in a loop);
//     consumer.Deduplicating in a package that never claims.
//   - Escape: the handler's transaction or context captured by a goroutine
//     started in the handler (unless only the context, joined), sent on a
//     channel, stored where it outlives the handler, or the transaction
//     shared by an errgroup's goroutines; also through the functions it is
//     given to, in this package or another of the module (a scheduler, a
//     worker pool, a buffer), followed on the SSA form.
//   - Settle: user code settling deliveries itself, or a broker client with
//     auto-commit or auto-ack, in a package that builds an oncely consumer.
//
// Run them with `oncely vet ./...` or, as a vet tool,
// `go vet -vettool=$(which oncelyvet) ./...`. Objects are identified through
// go/types (types.Info), never by their names: a local type or function
// called Pool or New is not mistaken for pgxpool.Pool or consumer.New.
package vet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Import paths of the packages whose objects the analyzers look for.
const (
	pathModule     = "github.com/oncely/oncely"
	pathConsumer   = "github.com/oncely/oncely/consumer"
	pathMiddleware = "github.com/oncely/oncely/middleware"
	pathPostgres   = "github.com/oncely/oncely/store/postgres"
	pathStore      = "github.com/oncely/oncely/store"
	pathAdapters   = "github.com/oncely/oncely/adapters"
	pathPgx        = "github.com/jackc/pgx/v5"
	pathPgxpool    = "github.com/jackc/pgx/v5/pgxpool"
	pathSQL        = "database/sql"
	pathKgo        = "github.com/twmb/franz-go/pkg/kgo"
	pathAMQP       = "github.com/rabbitmq/amqp091-go"
	pathContext    = "context"
	pathHTTP       = "net/http"
	pathErrgroup   = "golang.org/x/sync/errgroup"
)

// Analyzers returns every oncely analyzer, in a new slice.
func Analyzers() []*analysis.Analyzer {
	return []*analysis.Analyzer{TxEscape, NoDedupe, Escape, Settle}
}

// isFunc reports whether obj is the package-level function pkg.name.
func isFunc(obj types.Object, pkg, name string) bool {
	f, ok := obj.(*types.Func)
	return ok && f.Pkg() != nil && f.Pkg().Path() == pkg && f.Name() == name &&
		f.Type().(*types.Signature).Recv() == nil
}

// isMethod reports whether obj is method name of the (pointer to) named
// type pkg.typ, or of the interface pkg.typ.
func isMethod(obj types.Object, pkg, typ, name string) bool {
	f, ok := obj.(*types.Func)
	if !ok || f.Name() != name {
		return false
	}
	recv := f.Type().(*types.Signature).Recv()
	return recv != nil && isNamed(recv.Type(), pkg, typ)
}

// isNamed reports whether t, or what t points to, is the named type pkg.name.
func isNamed(t types.Type, pkg, name string) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	o := n.Obj()
	return o.Pkg() != nil && o.Pkg().Path() == pkg && o.Name() == name
}

// callee returns the function or method call statically calls, or nil.
func callee(info *types.Info, call *ast.CallExpr) *types.Func {
	f, _ := typeutil.Callee(info, call).(*types.Func)
	return f
}

// funcDecls maps the package's functions and methods to their declarations,
// and the variables assigned exactly one function literal (v := func…,
// var v = func…) to it: the helpers and closures a handler can reach.
type funcDecls struct {
	decls map[*types.Func]*ast.FuncDecl
	lits  map[*types.Var]*ast.FuncLit
}

func newFuncDecls(pass *analysis.Pass) *funcDecls {
	d := &funcDecls{decls: map[*types.Func]*ast.FuncDecl{}, lits: map[*types.Var]*ast.FuncLit{}}
	count := map[*types.Var]int{}
	note := func(id *ast.Ident, rhs ast.Expr) {
		v, ok := pass.TypesInfo.ObjectOf(id).(*types.Var)
		if !ok {
			return
		}
		count[v]++
		if lit, ok := ast.Unparen(rhs).(*ast.FuncLit); ok {
			d.lits[v] = lit
		}
	}
	for _, f := range pass.Files {
		for _, decl := range f.Decls {
			if n, ok := decl.(*ast.FuncDecl); ok && n.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[n.Name].(*types.Func); ok {
					d.decls[fn] = n
				}
			}
		}
	}
	eachVarAssignment(pass, note)
	for v, c := range count {
		if c != 1 {
			delete(d.lits, v) // reassigned: which literal runs is not known
		}
	}
	return d
}

// body returns the body of the function obj refers to when it is declared
// in this package (a function, a method, or a variable holding one function
// literal), or nil.
func (d *funcDecls) body(obj types.Object) (ast.Node, *ast.FuncType, *ast.BlockStmt) {
	switch o := obj.(type) {
	case *types.Func:
		if decl := d.decls[o.Origin()]; decl != nil {
			return decl, decl.Type, decl.Body
		}
	case *types.Var:
		if lit := d.lits[o]; lit != nil {
			return lit, lit.Type, lit.Body
		}
	}
	return nil, nil, nil
}

// lookup returns the package-level object pkg.name when the package under
// analysis is pkg or imports it, else nil.
func lookup(pass *analysis.Pass, pkg, name string) types.Object {
	if pass.Pkg.Path() == pkg {
		return pass.Pkg.Scope().Lookup(name)
	}
	for _, p := range pass.Pkg.Imports() {
		if p.Path() == pkg {
			return p.Scope().Lookup(name)
		}
	}
	return nil
}

// imports reports whether the package under analysis is pkg or imports it.
func imports(pass *analysis.Pass, pkg string) bool {
	if pass.Pkg.Path() == pkg {
		return true
	}
	for _, p := range pass.Pkg.Imports() {
		if p.Path() == pkg {
			return true
		}
	}
	return false
}

// frameworkPackage reports whether path (a package path, possibly with the
// _test suffix of an external test package) is oncely's own code: the module
// github.com/oncely/oncely except its examples. The framework legitimately
// settles deliveries and configures broker clients; Settle skips it.
func frameworkPackage(path string) bool {
	path = strings.TrimSuffix(path, "_test")
	const mod = "github.com/oncely/oncely"
	if path != mod && !strings.HasPrefix(path, mod+"/") {
		return false
	}
	return !strings.HasPrefix(path, mod+"/examples/") && path != mod+"/examples"
}

// allowPrefix starts the comment that silences one analyzer's report on its
// own line or the line below it: //oncely:allow NAME REASON. The reason is
// required, so every exception says why, and `grep -rn oncely:allow` lists
// them all for review.
const allowPrefix = "//oncely:allow "

// report reports a diagnostic of analyzer name at pos unless an
// //oncely:allow comment with a reason silences it.
func report(pass *analysis.Pass, name string, pos token.Pos, format string, args ...any) {
	reportFix(pass, name, pos, analysis.SuggestedFix{}, format, args...)
}

// reportFix is report with a suggested fix (none when fix has no edits).
func reportFix(pass *analysis.Pass, name string, pos token.Pos, fix analysis.SuggestedFix, format string, args ...any) {
	d := analysis.Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)}
	if len(fix.TextEdits) > 0 {
		d.SuggestedFixes = []analysis.SuggestedFix{fix}
	}
	reportDiag(pass, name, d)
}

// reportRelated is report with related information (another line the
// finding involves: the handler's call of a helper).
func reportRelated(pass *analysis.Pass, name string, pos token.Pos, related []analysis.RelatedInformation, format string, args ...any) {
	reportDiag(pass, name, analysis.Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...), Related: related})
}

// reportDiag reports d of analyzer name unless an //oncely:allow comment
// with a reason silences it.
func reportDiag(pass *analysis.Pass, name string, d analysis.Diagnostic) {
	switch found, reason := allowComment(pass, name, d.Pos); {
	case found && !reason:
		d.Message += " (the //oncely:allow comment here needs a reason)"
		pass.Report(d)
	case !found:
		pass.Report(d)
	}
}

// allowComment reports whether an //oncely:allow comment for analyzer name
// is on pos's line or the line above it, and whether it gives a reason.
func allowComment(pass *analysis.Pass, name string, pos token.Pos) (found, reason bool) {
	line := pass.Fset.Position(pos).Line
	for _, f := range pass.Files {
		if pos < f.FileStart || pos > f.FileEnd {
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				l := pass.Fset.Position(c.Slash).Line
				if l != line && l != line-1 {
					continue
				}
				rest, ok := strings.CutPrefix(c.Text, allowPrefix+name)
				if !ok || rest != "" && rest[0] != ' ' {
					continue
				}
				return true, strings.TrimSpace(rest) != ""
			}
		}
	}
	return false, false
}
