package vet

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// stmtRead reports whether call, a query method (see dbReads) of a
// prepared *sql.Stmt, reads: the statement's SQL is not at the call but
// where it was prepared, so the query is judged by the SQL the package
// prepares into the variable or field the statement is called through
// (stmt, err := db.PrepareContext(ctx, `SELECT …`) then c.byID = stmt).
// It reads when every such SQL is a constant SELECT without a side effect
// (see readSQL), or when the package prepares none into it (a statement
// given by another package: a query through Query or QueryRow is taken
// as a read, as its name says). SQL prepared that is not a constant
// SELECT (an INSERT … RETURNING, a text built at run time) is a write.
//
// What it does not catch: a statement prepared in another package with
// an INSERT … RETURNING and queried here, and one prepared in a function
// of the package and returned (only assignments to the variable or field
// are followed, through local variables).
func stmtRead(pass *analysis.Pass, call *ast.CallExpr, method string) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !dbReads[method] || !isNamed(pass.TypesInfo.TypeOf(sel.X), pathSQL, "Stmt") {
		return false
	}
	v := exprVar(pass, sel.X)
	if v == nil {
		return true // a statement built in the expression: not prepared here
	}
	reads := true
	preparedInto(pass, v, map[*types.Var]bool{}, func(sql ast.Expr) {
		reads = reads && readSQL(pass.TypesInfo.Types[sql])
	})
	return reads
}

// exprVar returns the variable or field x names (stmt, c.byID), or nil.
func exprVar(pass *analysis.Pass, x ast.Expr) *types.Var {
	switch x := ast.Unparen(x).(type) {
	case *ast.Ident:
		v, _ := pass.TypesInfo.Uses[x].(*types.Var)
		return v
	case *ast.SelectorExpr:
		v, _ := pass.TypesInfo.Uses[x.Sel].(*types.Var)
		return v
	}
	return nil
}

// preparedInto calls sql with the SQL argument of each Prepare or
// PrepareContext call whose statement the package assigns to v, directly
// or through local variables (seen guards cycles).
func preparedInto(pass *analysis.Pass, v *types.Var, seen map[*types.Var]bool, sql func(ast.Expr)) {
	if seen[v] {
		return
	}
	seen[v] = true
	value := func(e ast.Expr) {
		e = ast.Unparen(e)
		if call, ok := e.(*ast.CallExpr); ok {
			fn := callee(pass.TypesInfo, call)
			if fn != nil && (fn.Name() == "Prepare" || fn.Name() == "PrepareContext") && fn.Pkg() != nil && fn.Pkg().Path() == pathSQL {
				sql(call.Args[len(call.Args)-1])
			}
			return
		}
		if w := exprVar(pass, e); w != nil && w != v {
			preparedInto(pass, w, seen, sql)
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && pass.TypesInfo.Uses[id] == v {
					value(n.Value)
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if exprVar(pass, l) != v && pass.TypesInfo.Defs[identOf(l)] != v {
						continue
					}
					switch {
					case len(n.Lhs) == len(n.Rhs):
						value(n.Rhs[i])
					case i == 0 && len(n.Rhs) == 1:
						value(n.Rhs[0]) // stmt, err := db.Prepare(…)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if pass.TypesInfo.Defs[id] == v && i < len(n.Values) {
						value(n.Values[i])
					}
				}
			}
			return true
		})
	}
}

// identOf returns e when it is an identifier, else nil.
func identOf(e ast.Expr) *ast.Ident {
	id, _ := e.(*ast.Ident)
	return id
}

// readSQL reports whether tv, the SQL given to a query, is a constant
// SELECT whose text shows no side effect (see selectWrites).
func readSQL(tv types.TypeAndValue) bool {
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	sql := stripSQLComments(constant.StringVal(tv.Value))
	words := strings.Fields(sql)
	return len(words) > 0 && strings.EqualFold(words[0], "SELECT") && !selectWrites(sql)
}
