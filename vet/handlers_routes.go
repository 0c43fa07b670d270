package vet

import (
	"go/ast"
	"go/types"
	"sort"

	"golang.org/x/tools/go/analysis"
)

// routedHandlers returns the functions of the package that a
// transactional handler of hs runs through a function value given its
// transaction: a router's fn(ctx, tx, msg), fn looked up in a table of
// routes (map[string]route{"order.cancelled": o.cancelled}), a slice of
// steps or a field. The handler can only give them its own transaction,
// so they are transactional handlers too (see txHandler). A function
// value's possible targets are the package's functions and methods of an
// identical signature that the package uses as values: referenced without
// being called (o.cancelled in a map literal, a slice, a field, an
// assignment).
//
// What it does not follow: a function literal in the table (like the
// literals of litFields given the transaction, it is written against it;
// what else it uses, a test's fault injected through an admin pool, is
// left to review), a function of another package reached that way, and a
// table whose functions are of another signature (a wrapper's
// func(ctx, msg) closing over the transaction).
func routedHandlers(pass *analysis.Pass, decls *funcDecls, hs []*txHandler) []ast.Node {
	var targets []routeTarget
	var out []ast.Node
	seen := map[ast.Node]bool{}
	for _, h := range hs {
		seen[h.node] = true
	}
	for i := 0; i < len(hs); i++ {
		h := hs[i]
		ast.Inspect(h.body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || callee(pass.TypesInfo, call) != nil || !givesTx(pass, call, h.tx) {
				return true
			}
			if tv := pass.TypesInfo.Types[call.Fun]; tv.IsType() || tv.IsBuiltin() {
				return true
			}
			sig, ok := pass.TypesInfo.TypeOf(call.Fun).Underlying().(*types.Signature)
			if !ok {
				return true
			}
			if targets == nil {
				targets = routeTargets(pass, decls)
			}
			for _, t := range targets {
				if !seen[t.node] && types.Identical(sig, t.sig) {
					seen[t.node] = true
					out = append(out, t.node)
				}
			}
			return true
		})
	}
	return out
}

// givesTx reports whether one of call's arguments is one of txs.
func givesTx(pass *analysis.Pass, call *ast.CallExpr, txs map[types.Object]bool) bool {
	for _, a := range call.Args {
		if id, ok := ast.Unparen(a).(*ast.Ident); ok && txs[pass.TypesInfo.Uses[id]] {
			return true
		}
	}
	return false
}

// routeTarget is a function or method of the package used as a value:
// its declaration and its signature.
type routeTarget struct {
	node ast.Node
	sig  *types.Signature
}

// routeTargets returns the package's functions and methods referenced as
// values (not called), with their signatures.
func routeTargets(pass *analysis.Pass, decls *funcDecls) []routeTarget {
	called := map[*ast.Ident]bool{}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				switch f := ast.Unparen(call.Fun).(type) {
				case *ast.Ident:
					called[f] = true
				case *ast.SelectorExpr:
					called[f.Sel] = true
				}
			}
			return true
		})
	}
	var out []routeTarget
	for id, obj := range pass.TypesInfo.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || called[id] || fn.Pkg() != pass.Pkg {
			continue
		}
		if decl := decls.decls[fn.Origin()]; decl != nil {
			out = append(out, routeTarget{decl, fn.Type().(*types.Signature)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Pos() < out[j].node.Pos() })
	return out
}
