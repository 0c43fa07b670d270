package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// shapedHandlers returns the package's functions and literals of the shape
// postgres.HandlerFunc and postgres.BatchHandlerFunc take: a
// context.Context, a pgx.Tx and a *consumer.Message (or a
// []*consumer.Message), returning an error. They are transactional
// handlers by their type: whoever wires them, in this package or another
// (a route table, a service's Handlers map, cmd/main), calls them with the
// claim's transaction and its context, and a helper of that shape is called
// with the handler's own.
//
// What it does not find: a handler of another shape (a plain
// consumer.Handler, whose transaction is in its context) wired out of
// sight; those are found only by the rules of txHandler.
func shapedHandlers(pass *analysis.Pass) []ast.Node {
	var out []ast.Node
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			var t types.Type
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body == nil {
					return true
				}
				if obj := pass.TypesInfo.Defs[n.Name]; obj != nil {
					t = obj.Type()
				}
			case *ast.FuncLit:
				t = pass.TypesInfo.TypeOf(n)
			default:
				return true
			}
			if t != nil && handlerShaped(t) {
				out = append(out, n)
			}
			return true
		})
	}
	return out
}

// handlerShaped reports whether t is a func(context.Context, pgx.Tx,
// *consumer.Message or []*consumer.Message) error.
func handlerShaped(t types.Type) bool {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || sig.Params().Len() != 3 || sig.Results().Len() != 1 || sig.Variadic() {
		return false
	}
	p := sig.Params()
	if !isNamed(p.At(0).Type(), pathContext, "Context") || !isNamed(p.At(1).Type(), pathPgx, "Tx") {
		return false
	}
	if !types.Identical(sig.Results().At(0).Type(), types.Universe.Lookup("error").Type()) {
		return false
	}
	msg := p.At(2).Type()
	if s, ok := msg.(*types.Slice); ok {
		msg = s.Elem()
	}
	ptr, ok := msg.(*types.Pointer)
	return ok && isNamed(ptr.Elem(), pathConsumer, "Message")
}
