package vet

import (
	"go/ast"
	"go/constant"
	"go/types"
	"os"

	"golang.org/x/tools/go/analysis"
)

// fileWrites are the functions of package os (and io/ioutil's WriteFile)
// that create, change or remove a file by its path.
var fileWrites = map[string]bool{
	"WriteFile": true, "Create": true, "OpenFile": true, "Rename": true, "Remove": true, "RemoveAll": true,
	"Truncate": true, "Link": true, "Symlink": true,
}

// fileMethods are the methods of *os.File that write to it.
var fileMethods = map[string]bool{"Write": true, "WriteString": true, "WriteAt": true, "ReadFrom": true, "Truncate": true}

// fileEffect returns a description of call when it writes to the file
// system, which the claim's rollback cannot undo and a redelivery repeats
// (a file dropped into a spool directory another system picks up), or "":
//
//   - os.WriteFile, Create, Rename, Remove, RemoveAll, Truncate, Link,
//     Symlink, io/ioutil.WriteFile, and os.OpenFile unless its flag is a
//     constant that opens the file read-only;
//   - a write (Write, WriteString, WriteAt, ReadFrom, Truncate) to an
//     *os.File held in a struct field (a journal opened at start-up),
//     unless the package also sets that field to os.Stdout or os.Stderr.
//
// Not reported (see scratchFiles): a file under a temporary directory
// (os.TempDir, os.MkdirTemp, os.CreateTemp, testing's TempDir, and paths
// built from them), a deferred Remove or RemoveAll (a cleanup), writes to
// os.Stdout and os.Stderr, to a bytes.Buffer or through log and log/slog.
//
// What it does not catch: a write to an *os.File the handler is given as
// a parameter or holds in a local variable (its opening is reported when
// the function opens it), os.Mkdir and MkdirAll, os.Chmod and Chtimes, and
// file systems behind another API (io/fs, afero, a cloud SDK's uploader).
func fileEffect(pass *analysis.Pass, fn *types.Func, call *ast.CallExpr) string {
	recv := fn.Type().(*types.Signature).Recv()
	switch {
	case recv == nil && fn.Pkg().Path() == "io/ioutil" && fn.Name() == "WriteFile":
		return "the file-system write ioutil.WriteFile"
	case recv == nil && fn.Pkg().Path() == "os" && fileWrites[fn.Name()]:
		if fn.Name() == "OpenFile" && len(call.Args) == 3 && readOnlyFlag(pass, call.Args[1]) {
			return ""
		}
		return "the file-system write os." + fn.Name()
	case recv != nil && isNamed(recv.Type(), "os", "File") && fileMethods[fn.Name()]:
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		field, ok := ast.Unparen(sel.X).(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		if v, ok := pass.TypesInfo.Uses[field.Sel].(*types.Var); ok && v.IsField() {
			return "the file write (*os.File)." + fn.Name() + " on " + types.ExprString(sel.X)
		}
	}
	return ""
}

// readOnlyFlag reports whether flag is a constant that opens a file
// without writing, creating or truncating it.
func readOnlyFlag(pass *analysis.Pass, flag ast.Expr) bool {
	tv, ok := pass.TypesInfo.Types[flag]
	if !ok || tv.Value == nil {
		return false
	}
	v, ok := constant.Int64Val(tv.Value)
	return ok && v&int64(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) == 0
}

// scratchFiles adds to exempt the calls of the package that fileEffect
// would report but that change nothing another system sees: a deferred
// os.Remove or RemoveAll (the cleanup of what the function made), a call
// whose path or file (for Rename, Link and Symlink: its destination) is
// built from a temporary directory or file
// (os.TempDir, os.MkdirTemp, os.CreateTemp, a TempDir method; followed
// through the variables assigned them and f.Name()), and a write to a
// struct field the package also sets to os.Stdout or os.Stderr.
func scratchFiles(pass *analysis.Pass, exempt map[*ast.CallExpr]bool) {
	temp := map[types.Object]bool{}
	isTemp := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				found = found || temp[pass.TypesInfo.Uses[n]]
			case *ast.CallExpr:
				if fn := callee(pass.TypesInfo, n); fn != nil && (fn.Name() == "TempDir" ||
					fn.Pkg() != nil && fn.Pkg().Path() == "os" && (fn.Name() == "MkdirTemp" || fn.Name() == "CreateTemp")) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	var assigns [][2]ast.Expr // a variable and the expression it is assigned
	console := map[*types.Var]bool{}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					switch {
					case len(n.Lhs) == len(n.Rhs):
						assigns = append(assigns, [2]ast.Expr{l, n.Rhs[i]})
					case len(n.Rhs) == 1 && i == 0:
						assigns = append(assigns, [2]ast.Expr{l, n.Rhs[0]}) // f, err := os.CreateTemp(…)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if i < len(n.Values) {
						assigns = append(assigns, [2]ast.Expr{id, n.Values[i]})
					}
				}
			case *ast.DeferStmt:
				if fn := callee(pass.TypesInfo, n.Call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "os" && (fn.Name() == "Remove" || fn.Name() == "RemoveAll") {
					exempt[n.Call] = true
				}
			}
			return true
		})
	}
	eachFieldAssignment(pass, func(field *types.Var, value ast.Expr) {
		if sel, ok := ast.Unparen(value).(*ast.SelectorExpr); ok {
			if v, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Var); ok && v.Pkg() != nil && v.Pkg().Path() == "os" && (v.Name() == "Stdout" || v.Name() == "Stderr") {
				console[field] = true
			}
		}
	})
	for changed := true; changed; {
		changed = false
		for _, a := range assigns {
			id, ok := ast.Unparen(a[0]).(*ast.Ident)
			if !ok {
				continue
			}
			if obj := pass.TypesInfo.ObjectOf(id); obj != nil && !temp[obj] && isTemp(a[1]) {
				temp[obj], changed = true, true
			}
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := callee(pass.TypesInfo, call)
			if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "os" && fn.Pkg().Path() != "io/ioutil" {
				return true // only file calls are exempted: a Redis write given a temporary name stays an effect
			}
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
				if inner, ok := ast.Unparen(sel.X).(*ast.SelectorExpr); ok {
					if v, ok := pass.TypesInfo.Uses[inner.Sel].(*types.Var); ok && console[v] {
						exempt[call] = true
					}
				}
				if isTemp(sel.X) {
					exempt[call] = true // f.Write on a temporary file
				}
			}
			args := call.Args
			if len(args) > 0 && (fn.Name() == "Rename" || fn.Name() == "Link" || fn.Name() == "Symlink") {
				args = args[len(args)-1:] // where the file goes: a temporary file renamed into a spool is not scratch
			}
			for _, a := range args {
				if isTemp(a) {
					exempt[call] = true
				}
			}
			return true
		})
	}
}
