package vet

import "go/ast"

// NoDedupe also reports an opt-out (Config.Duplicates) beside a chain it
// sees deduplicate, which consumer.New refuses with
// consumer.ErrOptOutWithIdempotency. It reports only what it sees for certain:
// an unconditional opt-out and an idempotency middleware on every path.

// handlerDedupes reports whether h is visibly a deduplicating handler: it,
// or every value assigned to the local variable it names, uses a mark.
func (d *dedupe) handlerDedupes(h ast.Expr) bool {
	if d.sees(h) == yes {
		return true
	}
	v := d.localVar(h)
	if v == nil {
		return false
	}
	rhs := d.assigned(v)
	for _, r := range rhs {
		if r == nil || d.sees(r) != yes {
			return false
		}
	}
	return len(rhs) > 0
}

// allowsDuplicates reports whether cfg, the Config argument, visibly and
// unconditionally opts out: a composite literal setting Duplicates to a
// consumer.AllowDuplicates call, or a local variable only ever assigned
// such literals and whose Duplicates field is never assigned on its own.
func (d *dedupe) allowsDuplicates(cfg ast.Expr) bool {
	cfg = ast.Unparen(cfg)
	if c, ok := cfg.(*ast.CompositeLit); ok {
		return d.litAllows(c)
	}
	v := d.localVar(cfg)
	if v == nil {
		return false
	}
	rhs := d.assigned(v)
	for _, r := range rhs {
		c, ok := ast.Unparen(r).(*ast.CompositeLit)
		if !ok || !d.litAllows(c) {
			return false
		}
	}
	fieldSet := false
	ast.Inspect(d.fn, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, l := range as.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && d.isField(sel.Sel) && d.localVar(sel.X) == v {
					fieldSet = true
				}
			}
		}
		return true
	})
	return len(rhs) > 0 && !fieldSet
}

func (d *dedupe) litAllows(c *ast.CompositeLit) bool {
	for _, e := range c.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); ok && d.isField(id) {
			call, ok := ast.Unparen(kv.Value).(*ast.CallExpr)
			return ok && isFunc(callee(d.pass.TypesInfo, call), pathConsumer, "AllowDuplicates")
		}
	}
	return false
}

// optsOut answers whether cfg, the Config argument, sets Duplicates.
func (d *dedupe) optsOut(cfg ast.Expr) tri {
	cfg = ast.Unparen(cfg)
	if c, ok := cfg.(*ast.CompositeLit); ok {
		return d.litSetsDuplicates(c)
	}
	if call, ok := cfg.(*ast.CallExpr); ok {
		if answer, ok := d.helperConfig(call); ok {
			return answer
		}
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
