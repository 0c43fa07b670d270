package vet

import (
	"go/ast"
	"go/constant"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// safeMethods are the HTTP methods that only read, by HTTP's definition.
var safeMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true}

// safeRequest reports whether req, the request given to (*http.Client).Do,
// is a read: a local variable every assignment of which is
// http.NewRequest or http.NewRequestWithContext with a constant safe
// method (http.MethodGet, "HEAD", …; see safeMethods), and whose Method
// field the package never sets. A request built elsewhere, or with a
// method known only at run time, may change something.
func safeRequest(pass *analysis.Pass, req ast.Expr) bool {
	id, ok := ast.Unparen(req).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := pass.TypesInfo.Uses[id].(*types.Var)
	if !ok || v.Parent() == nil || v.Parent() == pass.Pkg.Scope() {
		return false
	}
	built, safe := 0, true
	note := func(lhs *ast.Ident, value ast.Expr) {
		if pass.TypesInfo.ObjectOf(lhs) != v {
			return
		}
		built++
		if !safeNewRequest(pass, value) {
			safe = false
		}
	}
	for _, f := range pass.Files {
		if v.Pos() < f.FileStart || v.Pos() > f.FileEnd {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					switch l := l.(type) {
					case *ast.Ident:
						switch {
						case len(n.Rhs) == len(n.Lhs):
							note(l, n.Rhs[i])
						case i == 0 && len(n.Rhs) == 1:
							note(l, n.Rhs[0]) // req, err := http.NewRequest…
						default:
							note(l, nil)
						}
					case *ast.SelectorExpr:
						if x, ok := ast.Unparen(l.X).(*ast.Ident); ok && pass.TypesInfo.Uses[x] == v {
							safe = false // req.Method = …, or another field
						}
					}
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i < len(n.Values) {
						note(name, n.Values[i])
					}
				}
			}
			return true
		})
	}
	return built > 0 && safe
}

// safeNewRequest reports whether value is a call of http.NewRequest or
// http.NewRequestWithContext with a constant safe method.
func safeNewRequest(pass *analysis.Pass, value ast.Expr) bool {
	call, ok := ast.Unparen(value).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := callee(pass.TypesInfo, call)
	var method ast.Expr
	switch {
	case isFunc(fn, pathHTTP, "NewRequest") && len(call.Args) == 3:
		method = call.Args[0]
	case isFunc(fn, pathHTTP, "NewRequestWithContext") && len(call.Args) == 4:
		method = call.Args[1]
	default:
		return false
	}
	tv := pass.TypesInfo.Types[method]
	return tv.Value != nil && tv.Value.Kind() == constant.String && safeMethods[constant.StringVal(tv.Value)]
}
