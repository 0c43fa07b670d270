package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// handleArgument returns how call hands a database handle to a parameter
// of a querying interface type ("*pgxpool.Pool passed to pgx.BeginFunc"),
// or "": the callee runs its statements through that handle, outside any
// transaction its caller was given. A repository's InTx helper that opens
// a transaction of its own with pgx.BeginFunc(ctx, s.pool, fn) is one.
// exportRunsOutside uses it, so a transactional handler calling such a
// function of another package is reported; in the handler's own package
// TxEscape reports the argument itself.
//
// What it does not catch: a handle given to a parameter of concrete type
// or of an interface without a querying method (any).
func handleArgument(pass *analysis.Pass, call *ast.CallExpr) string {
	if tv := pass.TypesInfo.Types[call.Fun]; tv.IsType() || tv.IsBuiltin() {
		return ""
	}
	t := pass.TypesInfo.TypeOf(call.Fun)
	if t == nil {
		return ""
	}
	sig, ok := t.Underlying().(*types.Signature)
	if !ok {
		return ""
	}
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || sig.Variadic() && i >= sig.Params().Len()-1 {
			break
		}
		h := dbHandle(pass.TypesInfo.TypeOf(arg))
		if h == "" || !queryingInterface(sig.Params().At(i).Type()) {
			continue
		}
		name := "a function value"
		if fn := callee(pass.TypesInfo, call); fn != nil && fn.Pkg() != nil {
			name = fn.Pkg().Name() + "." + fn.Name()
		}
		return h + " passed to " + name
	}
	return ""
}
