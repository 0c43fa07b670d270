package vet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// NoDedupe reports a consumer.New call whose handler chain has no
// idempotency middleware and whose Config does not opt out with
// Config.Duplicates.
//
// The bug it prevents: brokers deliver at least once — after a crash, a
// lost ack, a rebalance or a retry the same message comes again — so a
// chain without middleware.Idempotency applies its effects again. consumer.New
// refuses such a chain at start (consumer.ErrNoIdempotency); NoDedupe moves
// the failure from the deployment to the pull request.
//
// A chain deduplicates when a middleware argument, or the handler itself,
// is built by middleware.Idempotency or consumer.Deduplicating, directly or
// through a function of the same package that uses them. A middleware slice
// passed with ... is looked up in the enclosing function: its composite
// literals and appends, and in a helper of the package that returns it
// (see helperChain; a Config too, see helperConfig), or in the values the
// package gives the struct field it is read from (see fieldChain). The
// Config opts out when its literal sets
// Duplicates, or a local Config variable is assigned such a literal or has
// its Duplicates field set. Values NoDedupe cannot see through (parameters,
// locals assigned out of sight whose type can carry a handler, see unseen,
// fields of another package's types or given no value in sight, calls of
// function values, and functions of another module
// that build a handler or middleware, such as a platform team's shared
// middleware package, unless the package itself chains that function
// beside a visible claim, see clearBeside) are given the benefit of the
// doubt: it reports only chains it can prove lack idempotency, and the
// runtime's per-message claim witness catches the rest (see
// consumer.MarkClaimed).
//
// It also reports an unconditional opt-out (Duplicates set to a
// consumer.AllowDuplicates call) beside a chain it sees deduplicate, which
// consumer.New refuses with consumer.ErrOptOutWithIdempotency.
// TestVetAndNewAgree runs NoDedupe and consumer.New over the same chains
// and checks that they agree.
//
// It also reports the entry of a table of routes, each given its own
// consumer.New in a range loop, whose own chain has no idempotency
// middleware (see tableEntries).
//
// It also reports consumer.Deduplicating used in a package that never
// reports a claim (see markWithoutClaim): a mark without a claim.
//
// What it does not catch: a chain that routes some messages around its
// idempotency middleware (the witness dead-letters those with reason
// no-claim), and a platform function that does not deduplicate.
var NoDedupe = &analysis.Analyzer{
	Name: "nodedupe",
	Doc:  "report consumer.New without an idempotency middleware and without Config.Duplicates",
	URL:  "https://github.com/oncely/oncely/blob/main/docs/teams.md#oncely-vet",
	Run:  runNoDedupe,
}

// tri is a three-valued answer: no, yes or unknown.
type tri int

const (
	no tri = iota
	yes
	unknown
)

func runNoDedupe(pass *analysis.Pass) (any, error) {
	if pass.TypesInfo == nil || len(pass.Files) == 0 {
		return nil, nil // a dependency loaded from export data: no source, no facts
	}
	markWithoutClaim(pass)
	newFn := lookup(pass, pathConsumer, "New")
	if newFn == nil {
		return nil, nil
	}
	d := &dedupe{pass: pass, decls: newFuncDecls(pass), memo: map[ast.Node]tri{}, helpers: map[*ast.FuncDecl]tri{}, following: map[*types.Var]bool{}, reported: map[ast.Expr]bool{}}
	d.marks = []types.Object{lookup(pass, pathMiddleware, "Idempotency"), lookup(pass, pathConsumer, "Deduplicating")}
	if cfg, ok := lookup(pass, pathConsumer, "Config").(*types.TypeName); ok {
		if st, ok := cfg.Type().Underlying().(*types.Struct); ok {
			for f := range st.Fields() {
				if f.Name() == "Duplicates" {
					d.field = f
				}
			}
		}
	}
	d.clearBeside(newFn, lookup(pass, pathConsumer, "Chain"))
	for _, f := range pass.Files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				stack = append(stack, n) // never popped: enclosing checks positions
			case *ast.CallExpr:
				if fn := callee(pass.TypesInfo, n); fn == nil || fn != newFn || len(n.Args) < 3 {
					break
				}
				encl := enclosing(stack, n)
				if encl == nil {
					break
				}
				d.fn = funcBody(encl)
				chain := no
				for i, arg := range n.Args[3:] {
					spread := n.Ellipsis != 0 && i == len(n.Args)-4
					chain = max(chain, d.middleware(arg, spread))
				}
				if d.allowsDuplicates(n.Args[2]) && (chain == yes || d.handlerDedupes(n.Args[1])) {
					report(pass, "nodedupe", n.Pos(), "Config.Duplicates allows duplicates beside an idempotency middleware: consumer.New refuses this (consumer.ErrOptOutWithIdempotency), and the consumer would be reported as running without dedupe; drop one of the two")
					break
				}
				if d.handlerMayDedupe(n.Args[1]) || d.optsOut(n.Args[2]) != no {
					break
				}
				if chain == no {
					report(pass, "nodedupe", n.Pos(), "consumer.New without an idempotency middleware: redelivered messages apply their effects again; add middleware.Idempotency(store), or opt out explicitly with Config.Duplicates = consumer.AllowDuplicates(\"why duplicates are harmless\")")
				} else {
					d.tableEntries(n)
				}
			}
			return true
		})
	}
	return nil, nil
}

// dedupe answers NoDedupe's questions about one consumer.New call.
type dedupe struct {
	pass  *analysis.Pass
	decls *funcDecls
	marks []types.Object // middleware.Idempotency, consumer.Deduplicating (nil when not imported)
	memo  map[ast.Node]tri
	// helpers holds the answers of the helpers returning a chain or a
	// Config (see helperReturns).
	helpers map[*ast.FuncDecl]tri
	// following holds the local variables whose assignments sees is
	// following.
	following map[*types.Var]bool
	fn        *ast.BlockStmt // the body enclosing the call
	field     *types.Var     // consumer.Config's Duplicates field
	// fieldVals holds the values the package gives struct fields (see
	// fieldChain), collected on the first question.
	fieldVals map[*types.Var][]fieldValue
	reported  map[ast.Expr]bool // the table entries reported (see tableEntries)
	// beside holds the functions of other packages the package chains
	// beside a visible claim (see clearBeside).
	beside map[*types.Func]bool
}

// sees answers whether n deduplicates: yes when it uses a mark, directly or
// through functions of the package and local variables it references;
// unknown when it calls a function it cannot see into (see foreign: a
// platform team's middleware may wrap middleware.Idempotency); no otherwise.
func (d *dedupe) sees(n ast.Node) tri {
	answer := no
	ast.Inspect(n, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || answer == yes {
			return answer != yes
		}
		obj := d.pass.TypesInfo.Uses[id]
		for _, m := range d.marks {
			if m != nil && obj == m {
				answer = yes
				return false
			}
		}
		if d.foreign(obj) {
			answer = max(answer, unknown)
		}
		if v := d.localVar(id); v != nil && !d.following[v] {
			d.following[v] = true // cycles: a variable is followed once per path
			for _, rhs := range d.assigned(v) {
				if rhs == nil {
					answer = max(answer, d.unseen(v))
				} else {
					answer = max(answer, d.sees(rhs))
				}
			}
			delete(d.following, v)
		}
		if next, _, body := d.decls.body(obj); next != nil {
			seen, ok := d.memo[next]
			if !ok {
				d.memo[next] = no // cycles: assume not
				seen = d.sees(body)
				d.memo[next] = seen
			}
			answer = max(answer, seen)
		}
		return answer != yes
	})
	return answer
}

// foreign reports whether obj is a function NoDedupe cannot see into that
// builds a handler or a middleware (see buildsHandler): one declared outside
// the package under analysis and oncely's module — another module, or
// another package of the same module (a module path need not contain a
// dot, and the standard library builds no consumer handler) — and that the
// package does not chain beside a visible claim (see clearBeside).
func (d *dedupe) foreign(obj types.Object) bool {
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg() == d.pass.Pkg || !buildsHandler(fn.Type(), 2) || d.beside[fn.Origin()] {
		return false
	}
	path := fn.Pkg().Path()
	return path != pathModule && !strings.HasPrefix(path, pathModule+"/")
}

// buildsHandler reports whether t is, or is a function returning (to depth
// levels of functions), a consumer Handler, BatchHandler or Middleware.
func buildsHandler(t types.Type, depth int) bool {
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pathConsumer {
		switch n.Obj().Name() {
		case "Handler", "BatchHandler", "Middleware":
			return true
		}
	}
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || depth == 0 {
		return false
	}
	for v := range sig.Results().Variables() {
		if buildsHandler(v.Type(), depth-1) {
			return true
		}
	}
	return false
}

// handlerMayDedupe reports whether h is visibly, or possibly (built by a
// function NoDedupe cannot see into), a deduplicating handler.
func (d *dedupe) handlerMayDedupe(h ast.Expr) bool {
	if d.sees(h) != no {
		return true
	}
	if v := d.localVar(h); v != nil {
		for _, rhs := range d.assigned(v) {
			if rhs != nil && d.sees(rhs) != no {
				return true
			}
		}
	}
	return false
}

// middleware answers whether arg (a Middleware, or with spread a slice of
// them) deduplicates.
func (d *dedupe) middleware(arg ast.Expr, spread bool) tri {
	arg = ast.Unparen(arg)
	if !spread {
		switch a := arg.(type) {
		case *ast.CallExpr, *ast.FuncLit:
			answer := d.sees(a)
			if call, ok := a.(*ast.CallExpr); ok && answer == no && d.opaqueCall(call) {
				return unknown
			}
			return answer
		case *ast.SelectorExpr:
			if _, ok := d.pass.TypesInfo.Uses[a.Sel].(*types.Func); ok {
				return d.sees(a)
			}
			return d.fieldChain(a, false)
		}
	}
	if sel, ok := arg.(*ast.SelectorExpr); ok && spread {
		return d.fieldChain(sel, true)
	}
	if call, ok := arg.(*ast.CallExpr); ok && spread {
		if answer, ok := d.helperChain(call); ok {
			return answer
		}
	}
	v := d.localVar(arg)
	if v == nil {
		if c, ok := arg.(*ast.CompositeLit); ok && spread {
			return d.elements(c)
		}
		if id, ok := arg.(*ast.Ident); ok && !spread {
			if _, ok := d.pass.TypesInfo.Uses[id].(*types.Func); ok {
				return d.sees(id)
			}
		}
		return unknown
	}
	answer := no
	for _, rhs := range d.assigned(v) {
		if rhs == nil {
			return unknown
		}
		answer = max(answer, d.value(rhs, spread, func(a ast.Expr) bool { return d.localVar(a) == v }))
	}
	return answer
}

// value answers whether r, a value given to a variable or a field holding
// a Middleware (or with spread a slice of them), deduplicates; self tells
// the variable's own value, appended to, which answers nothing.
func (d *dedupe) value(r ast.Expr, spread bool, self func(ast.Expr) bool) tri {
	switch r := ast.Unparen(r).(type) {
	case *ast.CompositeLit:
		return d.elements(r)
	case *ast.CallExpr:
		if id, ok := ast.Unparen(r.Fun).(*ast.Ident); ok && id.Name == "append" && d.pass.TypesInfo.Types[r.Fun].IsBuiltin() {
			answer := no
			for i, a := range r.Args[1:] {
				if a := ast.Unparen(a); self(a) {
					continue
				}
				answer = max(answer, d.middleware(a, r.Ellipsis != 0 && i == len(r.Args)-2))
			}
			return answer
		}
		if h, ok := d.helperChain(r); ok && spread {
			return h
		}
		if !spread {
			return d.middleware(r, false)
		}
		if answer := d.sees(r); answer != no || !d.opaqueCall(r) {
			return answer
		}
		return unknown
	default:
		return d.middleware(r, spread)
	}
}

// opaqueCall reports whether call's result cannot be seen through: a call
// of a function value or interface method rather than of a declared
// function.
func (d *dedupe) opaqueCall(call *ast.CallExpr) bool {
	return callee(d.pass.TypesInfo, call) == nil
}

func (d *dedupe) elements(c *ast.CompositeLit) tri {
	answer := no
	for _, e := range c.Elts {
		answer = max(answer, d.middleware(e, false))
	}
	return answer
}

// isField reports whether id refers to consumer.Config's Duplicates field.
func (d *dedupe) isField(id *ast.Ident) bool {
	return d.field != nil && d.pass.TypesInfo.ObjectOf(id) == d.field
}

// localVar returns the variable x names when it is declared inside the
// enclosing function's body (not a parameter), else nil.
func (d *dedupe) localVar(x ast.Expr) *types.Var {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := d.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok || d.fn == nil || v.Pos() < d.fn.Pos() || v.Pos() > d.fn.End() {
		return nil
	}
	return v
}

// assigned returns every expression assigned to v in the enclosing body; a
// nil entry stands for an assignment it cannot see (a tuple from a call, a
// declaration without value is skipped since it is the zero value).
func (d *dedupe) assigned(v *types.Var) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(d.fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && d.pass.TypesInfo.ObjectOf(id) == v {
					if len(n.Lhs) == len(n.Rhs) {
						out = append(out, n.Rhs[i])
					} else {
						out = append(out, nil)
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if d.pass.TypesInfo.Defs[id] == v && i < len(n.Values) {
					if len(n.Names) == len(n.Values) {
						out = append(out, n.Values[i])
					} else {
						out = append(out, nil)
					}
				}
			}
		case *ast.UnaryExpr: // &v: written through a pointer
			if d.localVar(n.X) == v && n.Op.String() == "&" {
				out = append(out, nil)
			}
		}
		return true
	})
	return out
}
