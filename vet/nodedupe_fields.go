package vet

import (
	"go/ast"
	"go/types"
)

// NoDedupe follows a chain kept in a struct field of a type the package
// declares (a dependency container, consumer.New(src, h, cfg,
// deps.Middlewares...)): the field's answer is what every value the
// package gives it answers, each read in the function that gives it (a
// slice literal, a local variable and its appends, a helper's chain). A
// field the package never gives a value, or gives one it cannot see (a
// tuple from a call, an element set by index, a write through its
// address or copy), answers unknown, and so does a field of a type of
// another package: a platform's container may hold the idempotency
// middleware.
//
// What it does not see: an exported field that another package also sets
// (main building its own container): the answer is this package's values
// alone, and a report there is wrong; mark the consumer.New call
// //oncely:allow nodedupe REASON, or build the container in this package.

// fieldValue is a value the package gives a struct field, with the body of
// the function that gives it (nil at package level) and the composite
// literal it is in (nil in an assignment); a nil value is one that cannot
// be seen.
type fieldValue struct {
	value ast.Expr
	body  *ast.BlockStmt
	lit   *ast.CompositeLit
}

// fieldChain answers whether the field sel selects (a Middleware, or with
// spread a slice of them) deduplicates, by what every value the package
// gives it answers.
func (d *dedupe) fieldChain(sel *ast.SelectorExpr, spread bool) tri {
	if s := d.pass.TypesInfo.Selections[sel]; s == nil || s.Kind() != types.FieldVal {
		return unknown
	}
	field, ok := d.pass.TypesInfo.Uses[sel.Sel].(*types.Var)
	if !ok || field.Pkg() != d.pass.Pkg {
		return unknown
	}
	if d.following[field] {
		return no // the field's own value, appended to: its other values answer
	}
	values := d.valuesOf(field)
	if len(values) == 0 {
		return unknown
	}
	d.following[field] = true
	defer delete(d.following, field)
	outer := d.fn
	defer func() { d.fn = outer }()
	answer := no
	for _, v := range values {
		if v.value == nil {
			return unknown
		}
		d.fn = v.body
		answer = max(answer, d.value(v.value, spread, func(a ast.Expr) bool {
			sel, ok := a.(*ast.SelectorExpr)
			return ok && d.pass.TypesInfo.Uses[sel.Sel] == field
		}))
	}
	return answer
}

// valuesOf returns the values the package gives field (see fieldValues),
// collected on the first question.
func (d *dedupe) valuesOf(field *types.Var) []fieldValue {
	if d.fieldVals == nil {
		d.fieldVals = fieldValues(d.pass.TypesInfo, d.pass.Files)
	}
	return d.fieldVals[field]
}

// fieldValues returns, for every struct field the files give a value, the
// values: in a composite literal (keyed or positional) and in an
// assignment; a nil value for a write it cannot see (x.F[i] = …, &x.F,
// copy(x.F, …), a tuple assigned from a call).
func fieldValues(info *types.Info, files []*ast.File) map[*types.Var][]fieldValue {
	out := map[*types.Var][]fieldValue{}
	for _, f := range files {
		var stack []ast.Node
		field := func(x ast.Expr) *types.Var {
			sel, ok := ast.Unparen(x).(*ast.SelectorExpr)
			if !ok {
				return nil
			}
			v, ok := info.Uses[sel.Sel].(*types.Var)
			if !ok || !v.IsField() {
				return nil
			}
			return v
		}
		note := func(v *types.Var, value ast.Expr, at ast.Node) {
			if v == nil {
				return
			}
			lit, _ := at.(*ast.CompositeLit)
			out[v] = append(out[v], fieldValue{value, funcBody(enclosing(stack, at)), lit})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				stack = append(stack, n) // never popped: enclosing checks positions
			case *ast.CompositeLit:
				t := info.TypeOf(n)
				if p, ok := t.Underlying().(*types.Pointer); ok {
					t = p.Elem() // an elided &T{…} in a literal of pointers
				}
				st, ok := t.Underlying().(*types.Struct)
				if !ok {
					break
				}
				for i, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							v, _ := info.Uses[id].(*types.Var)
							note(v, kv.Value, n)
						}
					} else if i < st.NumFields() {
						note(st.Field(i), e, n)
					}
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if len(n.Lhs) == len(n.Rhs) {
						note(field(l), n.Rhs[i], n)
					} else {
						note(field(l), nil, n)
					}
					if ix, ok := l.(*ast.IndexExpr); ok {
						note(field(ix.X), nil, n)
					}
				}
			case *ast.UnaryExpr:
				if n.Op.String() == "&" {
					note(field(n.X), nil, n)
				}
			case *ast.CallExpr:
				if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok && id.Name == "copy" && info.Types[n.Fun].IsBuiltin() && len(n.Args) > 0 {
					note(field(n.Args[0]), nil, n)
				}
			}
			return true
		})
	}
	return out
}
