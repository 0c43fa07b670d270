package vet

import (
	"go/ast"
	"go/types"
	"path/filepath"
)

// NoDedupe also reports an entry of a table of routes whose own chain has
// no idempotency middleware. consumer.New called in a loop over the table
// (for _, r := range routes { consumer.New(src, r.handler, cfg, r.mws...) })
// builds one consumer per entry: an entry whose chain field is given, in
// the entry's composite literal, a value without idempotency is a consumer
// without dedupe, though the other entries deduplicate. It is reported at
// that value. When the handler is read from the same entry, the entry's
// handler counts too (one built by middleware.Idempotency deduplicates),
// and an entry without a handler is not reported.
//
// What it does not catch: a table whose entries' chains are also set by
// assignment (which entry holds which value is not known), a loop by index
// (routes[i].mws), and a chain argument beside other middleware that may
// deduplicate.

// tableEntries reports the entries without dedupe of the table whose
// range loop holds call, a consumer.New call whose chain is the range
// value's field.
func (d *dedupe) tableEntries(call *ast.CallExpr) {
	var sel *ast.SelectorExpr
	spread, rest := false, no
	for i, arg := range call.Args[3:] {
		last := call.Ellipsis != 0 && i == len(call.Args)-4
		if s, ok := ast.Unparen(arg).(*ast.SelectorExpr); ok && sel == nil && d.rangeValue(s.X, call) != nil {
			sel, spread = s, last
			continue
		}
		rest = max(rest, d.middleware(arg, last))
	}
	if sel == nil || rest != no {
		return
	}
	field, ok := d.pass.TypesInfo.Uses[sel.Sel].(*types.Var)
	if !ok || !field.IsField() || field.Pkg() != d.pass.Pkg {
		return
	}
	var handler *types.Var // the handler's field in the same entry
	if h, ok := ast.Unparen(call.Args[1]).(*ast.SelectorExpr); ok && d.rangeValue(h.X, call) == d.rangeValue(sel.X, call) {
		handler, _ = d.pass.TypesInfo.Uses[h.Sel].(*types.Var)
	}
	values := d.valuesOf(field)
	for _, v := range values {
		if v.value == nil || v.lit == nil {
			return // set out of sight or by assignment: not an entry
		}
	}
	self := func(a ast.Expr) bool {
		s, ok := a.(*ast.SelectorExpr)
		return ok && d.pass.TypesInfo.Uses[s.Sel] == field
	}
	outer := d.fn
	defer func() { d.fn = outer }()
	at := d.pass.Fset.Position(call.Pos())
	for _, v := range values {
		d.fn = v.body
		if d.reported[v.value] || d.value(v.value, spread, self) != no {
			continue
		}
		if handler != nil {
			if h := litField(d.pass.TypesInfo, v.lit, handler); h == nil || d.handlerMayDedupe(h) {
				continue
			}
		}
		d.reported[v.value] = true
		report(d.pass, "nodedupe", v.value.Pos(), "this entry's %s has no idempotency middleware, and consumer.New at %s:%d builds a consumer for each entry of the table: redelivered messages of this entry apply their effects again; add middleware.Idempotency(store), or opt this entry out explicitly with Config.Duplicates = consumer.AllowDuplicates(\"why duplicates are harmless\")",
			field.Name(), filepath.Base(at.Filename), at.Line)
	}
}

// rangeValue returns the variable x names when it is the value variable of
// a range loop of the enclosing function whose body holds call, or nil.
func (d *dedupe) rangeValue(x ast.Expr, call *ast.CallExpr) *types.Var {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok || d.fn == nil {
		return nil
	}
	v, ok := d.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	found := false
	ast.Inspect(d.fn, func(n ast.Node) bool {
		r, ok := n.(*ast.RangeStmt)
		if !ok || found {
			return !found
		}
		if val, ok := r.Value.(*ast.Ident); ok && d.pass.TypesInfo.Defs[val] == v && r.Body.Pos() <= call.Pos() && call.End() <= r.Body.End() {
			found = true
		}
		return !found
	})
	if !found {
		return nil
	}
	return v
}

// litField returns the value lit gives field (keyed or by position), or
// nil.
func litField(info *types.Info, lit *ast.CompositeLit, field *types.Var) ast.Expr {
	for i, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && info.Uses[id] == field {
				return kv.Value
			}
			continue
		}
		t := info.TypeOf(lit)
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		if st, ok := t.Underlying().(*types.Struct); ok && i < st.NumFields() && st.Field(i) == field {
			return e
		}
	}
	return nil
}
