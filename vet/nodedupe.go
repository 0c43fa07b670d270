package vet

import (
	"go/ast"
	"go/types"

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
// literals and appends. The Config opts out when its literal sets
// Duplicates, or a local Config variable is assigned such a literal or has
// its Duplicates field set. Values NoDedupe cannot see through (parameters,
// results of other packages' functions, struct fields) are given the
// benefit of the doubt: it reports only chains it can prove lack
// idempotency, and the check in consumer.New catches the rest.
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
	newFn := lookup(pass, pathConsumer, "New")
	if newFn == nil {
		return nil, nil
	}
	d := &dedupe{pass: pass, decls: newFuncDecls(pass), memo: map[ast.Node]bool{}}
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
				if d.handlerDedupes(n.Args[1]) || d.optsOut(n.Args[2]) != no {
					break
				}
				chain := no
				for i, arg := range n.Args[3:] {
					spread := n.Ellipsis != 0 && i == len(n.Args)-4
					chain = max(chain, d.middleware(arg, spread))
				}
				if chain == no {
					report(pass, "nodedupe", n.Pos(), "consumer.New without an idempotency middleware: redelivered messages apply their effects again; add middleware.Idempotency(store), or opt out explicitly with Config.Duplicates = consumer.AllowDuplicates(\"why duplicates are harmless\")")
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
	memo  map[ast.Node]bool
	fn    *ast.BlockStmt // the body enclosing the call
	field *types.Var     // consumer.Config's Duplicates field
}

// mentions reports whether n uses a mark, directly or through functions of
// the package it references.
func (d *dedupe) mentions(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || found {
			return !found
		}
		obj := d.pass.TypesInfo.Uses[id]
		for _, m := range d.marks {
			if m != nil && obj == m {
				found = true
			}
		}
		if next, _, body := d.decls.body(obj); !found && next != nil {
			seen, ok := d.memo[next]
			if !ok {
				d.memo[next] = false // cycles: assume not
				seen = d.mentions(body)
				d.memo[next] = seen
			}
			found = seen
		}
		return !found
	})
	return found
}

// handlerDedupes reports whether h is visibly a deduplicating handler.
func (d *dedupe) handlerDedupes(h ast.Expr) bool {
	if d.mentions(h) {
		return true
	}
	if v := d.localVar(h); v != nil {
		for _, rhs := range d.assigned(v) {
			if rhs != nil && d.mentions(rhs) {
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
			if d.mentions(a) {
				return yes
			}
			if call, ok := a.(*ast.CallExpr); ok && d.opaqueCall(call) {
				return unknown
			}
			return no
		case *ast.SelectorExpr:
			if _, ok := d.pass.TypesInfo.Uses[a.Sel].(*types.Func); ok {
				return d.triMentions(a)
			}
			return unknown // a field
		}
	}
	v := d.localVar(arg)
	if v == nil {
		if c, ok := arg.(*ast.CompositeLit); ok && spread {
			return d.elements(c)
		}
		if id, ok := arg.(*ast.Ident); ok && !spread {
			if _, ok := d.pass.TypesInfo.Uses[id].(*types.Func); ok {
				return d.triMentions(id)
			}
		}
		return unknown
	}
	answer := no
	for _, rhs := range d.assigned(v) {
		switch r := ast.Unparen(rhs).(type) {
		case nil:
			return unknown
		case *ast.CompositeLit:
			answer = max(answer, d.elements(r))
		case *ast.CallExpr:
			if id, ok := ast.Unparen(r.Fun).(*ast.Ident); ok && id.Name == "append" && d.pass.TypesInfo.Types[r.Fun].IsBuiltin() {
				for i, a := range r.Args[1:] {
					if a := ast.Unparen(a); d.localVar(a) == v {
						continue
					}
					answer = max(answer, d.middleware(a, r.Ellipsis != 0 && i == len(r.Args)-2))
				}
				continue
			}
			if spread {
				answer = max(answer, d.triMentions(r))
				if answer == no && d.opaqueCall(r) {
					answer = unknown
				}
			} else {
				answer = max(answer, d.middleware(r, false))
			}
		default:
			answer = max(answer, d.middleware(r, spread))
		}
	}
	return answer
}

func (d *dedupe) triMentions(n ast.Node) tri {
	if d.mentions(n) {
		return yes
	}
	return no
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

// optsOut answers whether cfg, the Config argument, sets Duplicates.
func (d *dedupe) optsOut(cfg ast.Expr) tri {
	cfg = ast.Unparen(cfg)
	if c, ok := cfg.(*ast.CompositeLit); ok {
		return d.litSetsDuplicates(c)
	}
	v := d.localVar(cfg)
	if v == nil {
		return unknown
	}
	answer := no
	for _, rhs := range d.assigned(v) {
		if c, ok := ast.Unparen(rhs).(*ast.CompositeLit); ok {
			answer = max(answer, d.litSetsDuplicates(c))
		} else {
			return unknown
		}
	}
	ast.Inspect(d.fn, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, l := range as.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && d.isField(sel.Sel) && d.localVar(sel.X) == v {
					answer = yes
				}
			}
		}
		return true
	})
	return answer
}

func (d *dedupe) litSetsDuplicates(c *ast.CompositeLit) tri {
	for _, e := range c.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && d.isField(id) {
				return yes
			}
		}
	}
	return no
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
