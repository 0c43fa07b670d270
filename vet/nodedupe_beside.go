package vet

import (
	"go/ast"
	"go/types"
)

// NoDedupe takes a function of another package that builds a middleware
// (see foreign) as one that does not deduplicate when the package under
// analysis itself chains it beside a visible idempotency middleware: a
// consumer.New or consumer.Chain call that has the function's result as an
// argument and, as another argument, a handler or middleware NoDedupe sees
// deduplicate (consumer.Chain(h, obs.Timing(log), middleware.Idempotency(st))).
// A chain holding two claims of one message would see its own claim as a
// duplicate, so the package shows that the function is not its dedupe, and
// another chain of the package holding it and nothing that deduplicates is
// reported. A function of another package the package never chains beside
// a visible claim keeps the benefit of the doubt.
//
// What it does not catch: a function chained beside a claim only through a
// slice, a helper or a variable (only the direct arguments of New and Chain
// count), and a package that misuses a deduplicating platform middleware
// beside middleware.Idempotency (it takes that middleware as not
// deduplicating).

// clearBeside records in d.beside the functions of other packages that a
// consumer.New or consumer.Chain call of the package has as a direct
// argument beside one it sees deduplicate. It runs before the chains are
// judged, and resets the answers it cached on the way.
func (d *dedupe) clearBeside(newFn, chainFn types.Object) {
	d.beside = map[*types.Func]bool{}
	for _, f := range d.pass.Files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				stack = append(stack, n) // never popped: enclosing checks positions
			case *ast.CallExpr:
				fn := callee(d.pass.TypesInfo, n)
				if fn == nil || (fn != newFn && fn != chainFn) {
					break
				}
				encl := enclosing(stack, n)
				if encl == nil {
					break
				}
				args := n.Args
				if fn == newFn {
					if len(n.Args) < 2 {
						break
					}
					args = append([]ast.Expr{n.Args[1]}, n.Args[min(3, len(n.Args)):]...)
				}
				d.fn = funcBody(encl)
				d.besideClaim(args, n.Ellipsis != 0)
			}
			return true
		})
	}
	d.fn = nil
	clear(d.memo)
	clear(d.helpers)
}

// besideClaim marks the foreign functions called as direct arguments of
// args when another argument deduplicates; the last argument is a slice
// when spread.
func (d *dedupe) besideClaim(args []ast.Expr, spread bool) {
	var foreign []*types.Func
	claimed := false
	for i, a := range args {
		if spread && i == len(args)-1 {
			claimed = claimed || d.middleware(a, true) == yes
			continue
		}
		if call, ok := ast.Unparen(a).(*ast.CallExpr); ok {
			if fn := callee(d.pass.TypesInfo, call); fn != nil && d.foreign(fn) {
				foreign = append(foreign, fn.Origin())
				continue
			}
		}
		claimed = claimed || d.sees(a) == yes
	}
	if claimed {
		for _, fn := range foreign {
			d.beside[fn] = true
		}
	}
}
