package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// handlerRunsOutside is TxEscape's fact about a function that returns a
// handler as an interface (a constructor returning consumer.Handler):
// the handler it returns has a Handle or HandleBatch method that runs
// statements through a database handle other than a transaction it is
// given (Via says how). Wired behind the Postgres claim in another
// package, those statements commit on their own.
type handlerRunsOutside struct{ Via string }

// AFact marks handlerRunsOutside as an analysis fact.
func (*handlerRunsOutside) AFact() {}

func (f *handlerRunsOutside) String() string { return "handlerRunsOutside(" + f.Via + ")" }

// exportHandlerFacts exports handlerRunsOutside for each exported function
// of the package returning an interface with a Handle or HandleBatch
// method, one of whose return statements gives a concrete handler whose
// method runs outside (via, see exportRunsOutside), a
// consumer.HandlerFunc conversion of such a function, or the result of a
// function of another package with the fact.
func exportHandlerFacts(pass *analysis.Pass, decls *funcDecls, via func(*types.Func) string) {
	for fn, decl := range decls.decls {
		if !fn.Exported() || !returnsHandler(fn) {
			continue
		}
		found := ""
		ast.Inspect(decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				for _, r := range n.Results {
					if found == "" {
						found = handlerVia(pass, r, via)
					}
				}
			}
			return found == ""
		})
		if found != "" {
			pass.ExportObjectFact(fn, &handlerRunsOutside{Via: found})
		}
	}
}

// returnsHandler reports whether fn returns an interface with a Handle or
// HandleBatch method.
func returnsHandler(fn *types.Func) bool {
	res := fn.Type().(*types.Signature).Results()
	for v := range res.Variables() {
		it, ok := v.Type().Underlying().(*types.Interface)
		if !ok {
			continue
		}
		for m := range it.Methods() {
			if m.Name() == "Handle" || m.Name() == "HandleBatch" {
				return true
			}
		}
	}
	return false
}

// handlerVia returns how the handler e runs statements outside a
// transaction it is given, or "".
func handlerVia(pass *analysis.Pass, e ast.Expr, via func(*types.Func) string) string {
	e = ast.Unparen(e)
	if call, ok := e.(*ast.CallExpr); ok {
		if pass.TypesInfo.Types[call.Fun].IsType() && len(call.Args) == 1 {
			if f := funcOf(pass, call.Args[0]); f != nil {
				return methodVia(pass, f, via) // consumer.HandlerFunc(h.handle)
			}
		}
		if f := callee(pass.TypesInfo, call); f != nil && f.Pkg() != pass.Pkg {
			var fact handlerRunsOutside
			if pass.ImportObjectFact(f.Origin(), &fact) {
				return f.Name() + " → " + fact.Via
			}
		}
	}
	t := pass.TypesInfo.TypeOf(e)
	if t == nil || types.IsInterface(t) {
		return ""
	}
	for _, name := range [...]string{"Handle", "HandleBatch"} {
		obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, name)
		if m, ok := obj.(*types.Func); ok {
			if v := methodVia(pass, m, via); v != "" {
				return v
			}
		}
	}
	return ""
}

// methodVia returns fn's runsOutside route, for a function of this
// package or of another one.
func methodVia(pass *analysis.Pass, fn *types.Func, via func(*types.Func) string) string {
	if fn.Pkg() == pass.Pkg {
		if v := via(fn.Origin()); v != "" {
			return fn.Name() + " → " + v
		}
		return ""
	}
	if f := importedRunsOutside(pass, fn); f != nil {
		return fn.Name() + " → " + f.Via
	}
	return ""
}

// funcOf returns the function or method value e names, or nil.
func funcOf(pass *analysis.Pass, e ast.Expr) *types.Func {
	switch v := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		if s := pass.TypesInfo.Selections[v]; s != nil && s.Kind() == types.MethodVal {
			f, _ := s.Obj().(*types.Func)
			return f
		}
		f, _ := pass.TypesInfo.Uses[v.Sel].(*types.Func)
		return f
	case *ast.Ident:
		f, _ := pass.TypesInfo.Uses[v].(*types.Func)
		return f
	}
	return nil
}

// wiredHandlerFact returns the handlerRunsOutside fact of the constructor
// of another package that built h: h is its call, or a local variable
// the package assigns such a call.
func wiredHandlerFact(pass *analysis.Pass, h ast.Expr, assigned map[*types.Var][]ast.Expr) (*types.Func, *handlerRunsOutside) {
	values := []ast.Expr{h}
	if id, ok := ast.Unparen(h).(*ast.Ident); ok {
		if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok {
			values = assigned[v]
		}
	}
	for _, val := range values {
		call, ok := ast.Unparen(val).(*ast.CallExpr)
		if !ok {
			continue
		}
		f := callee(pass.TypesInfo, call)
		if f == nil || f.Pkg() == pass.Pkg {
			continue
		}
		var fact handlerRunsOutside
		if pass.ImportObjectFact(f.Origin(), &fact) {
			return f, &fact
		}
	}
	return nil, nil
}
