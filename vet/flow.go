package vet

import (
	"go/build"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// paramFlows is Escape's fact about a function of the module: which of
// its parameters (by position in its signature, the receiver not counted)
// may reach another goroutine (a go statement, a channel send, a function
// given to errgroup's Go or time.AfterFunc) or be retained beyond the call
// (stored in a field, a package-level variable, a map or slice the
// function does not own). It is computed on the package's SSA form by
// following each parameter through locals, composite values, closures,
// conversions and calls: calls of the package's own functions, and calls
// of other packages' functions through their paramFlows facts. A call
// whose callee is not known (an interface method, a function value, a
// function of a package with no fact) is not taken as a flow.
type paramFlows struct{ Flows []paramFlow }

// paramFlow is one parameter's flow: Kind is flowGoroutine or flowStored,
// Via says how (for the report).
type paramFlow struct {
	Index int
	Kind  string
	Via   string
}

// The kinds of paramFlow.
const (
	flowGoroutine = "goroutine"
	flowStored    = "stored"
	// flowStoredRecv is a store into the method's receiver: retained as
	// long as the receiver is.
	flowStoredRecv = "stored in the receiver"
)

// AFact marks paramFlows as an analysis fact.
func (*paramFlows) AFact() {}

func (f *paramFlows) String() string {
	var b strings.Builder
	for _, p := range f.Flows {
		b.WriteString(p.Kind + ":" + p.Via + ";")
	}
	return "paramFlows(" + b.String() + ")"
}

// flowEngine computes parameter flows over one package's SSA form.
type flowEngine struct {
	pass *analysis.Pass
	pkg  *ssa.Package
	memo map[*ssa.Function]map[int]paramFlow // by SSA parameter index
	busy map[*ssa.Function]bool
}

// newFlowEngine builds the package's SSA form, or returns nil for a
// package of the standard library, of oncely itself or of a database
// driver: their functions get no facts (the standard library's goroutine
// runners are known by name, see goroutineRunner).
func newFlowEngine(pass *analysis.Pass) *flowEngine {
	path := pass.Pkg.Path()
	if pass.TypesInfo == nil || len(pass.Files) == 0 || standardLibrary(pass) ||
		path == pathModule || strings.HasPrefix(path, pathModule+"/") && !strings.Contains(path, "/examples/") ||
		strings.HasPrefix(path, "github.com/jackc/pgx/") {
		return nil
	}
	pkg := buildSSA(pass, 0)
	return &flowEngine{pass: pass, pkg: pkg, memo: map[*ssa.Function]map[int]paramFlow{}, busy: map[*ssa.Function]bool{}}
}

// buildSSA builds the SSA form of the package under analysis, its imports
// created from their types only (their functions have no bodies).
func buildSSA(pass *analysis.Pass, mode ssa.BuilderMode) *ssa.Package {
	prog := ssa.NewProgram(pass.Fset, ssa.InstantiateGenerics|mode)
	created := map[*types.Package]bool{}
	var createAll func(pkgs []*types.Package)
	createAll = func(pkgs []*types.Package) {
		for _, p := range pkgs {
			if !created[p] {
				created[p] = true
				prog.CreatePackage(p, nil, nil, true)
				createAll(p.Imports())
			}
		}
	}
	createAll(pass.Pkg.Imports())
	pkg := prog.CreatePackage(pass.Pkg, pass.Files, pass.TypesInfo, false)
	pkg.Build()
	return pkg
}

// standardLibrary reports whether the package under analysis is in GOROOT.
func standardLibrary(pass *analysis.Pass) bool {
	if build.Default.GOROOT == "" {
		return false
	}
	root := filepath.Join(build.Default.GOROOT, "src") + string(filepath.Separator)
	return strings.HasPrefix(pass.Fset.File(pass.Files[0].Pos()).Name(), root)
}

// function returns the SSA function of fn, declared in this package, or nil.
func (e *flowEngine) function(fn *types.Func) *ssa.Function {
	if e == nil || fn.Pkg() != e.pass.Pkg {
		return nil
	}
	return e.pkg.Prog.FuncValue(fn.Origin())
}

// exportFacts exports a paramFlows fact for every function and method of
// the package with a parameter that flows.
func (e *flowEngine) exportFacts() {
	if e == nil {
		return
	}
	for _, mem := range e.pkg.Members {
		switch m := mem.(type) {
		case *ssa.Function:
			e.export(m)
		case *ssa.Type:
			for _, t := range []types.Type{m.Type(), types.NewPointer(m.Type())} {
				ms := e.pkg.Prog.MethodSets.MethodSet(t)
				for sel := range ms.Methods() {
					if f := e.pkg.Prog.MethodValue(sel); f != nil && f.Pkg == e.pkg && f.Synthetic == "" {
						e.export(f)
					}
				}
			}
		}
	}
}

func (e *flowEngine) export(f *ssa.Function) {
	obj, ok := f.Object().(*types.Func)
	if !ok || obj.Pkg() != e.pass.Pkg {
		return
	}
	var fact paramFlows
	offset := 0
	if f.Signature.Recv() != nil {
		offset = 1
	}
	for i := offset; i < len(f.Params); i++ {
		if p, ok := e.param(f, i); ok {
			p.Index = i - offset
			fact.Flows = append(fact.Flows, p)
		}
	}
	if len(fact.Flows) > 0 {
		e.pass.ExportObjectFact(obj, &fact)
	}
}

// argFlow returns the flow of argument k (in the call's argument list,
// the receiver not counted) of a call of fn, from fn's fact or, for a
// function of this package, from its SSA form.
func (e *flowEngine) argFlow(fn *types.Func, k int) (paramFlow, bool) {
	sig := fn.Type().(*types.Signature)
	if n := sig.Params().Len(); sig.Variadic() && k >= n-1 {
		k = n - 1
	}
	if kind, via := goroutineRunner(fn, k); kind != "" {
		return paramFlow{Index: k, Kind: kind, Via: via}, true
	}
	if fn.Pkg() == e.pass.Pkg {
		f := e.function(fn)
		if f == nil {
			return paramFlow{}, false
		}
		if sig.Recv() != nil {
			k++
		}
		return e.param(f, k)
	}
	var fact paramFlows
	if fn.Pkg() != nil && e.pass.ImportObjectFact(fn.Origin(), &fact) {
		for _, p := range fact.Flows {
			if p.Index == k {
				return p, true
			}
		}
	}
	return paramFlow{}, false
}

// goroutineRunner reports the standard and x/sync functions that run the
// function given as argument k on another goroutine.
func goroutineRunner(fn *types.Func, k int) (string, string) {
	switch {
	case k == 0 && (isMethod(fn, pathErrgroup, "Group", "Go") || isMethod(fn, pathErrgroup, "Group", "TryGo") || isMethod(fn, "sync", "WaitGroup", "Go")):
		return flowGoroutine, "its goroutine"
	case k == 1 && isFunc(fn, "time", "AfterFunc"):
		return flowGoroutine, "its timer's goroutine"
	}
	return "", ""
}

// param returns the flow of f's SSA parameter i, memoised; a recursive
// call under computation is taken as no flow.
func (e *flowEngine) param(f *ssa.Function, i int) (paramFlow, bool) {
	if f.Pkg != e.pkg || i >= len(f.Params) {
		return paramFlow{}, false
	}
	if m, ok := e.memo[f]; ok {
		p, ok := m[i]
		return p, ok
	}
	if e.busy[f] {
		return paramFlow{}, false
	}
	e.busy[f] = true
	m := map[int]paramFlow{}
	for j, p := range f.Params {
		if fl, ok := e.value(p, map[ssa.Value]bool{}); ok {
			m[j] = fl
		}
	}
	delete(e.busy, f)
	e.memo[f] = m
	p, ok := m[i]
	return p, ok
}

// value returns how v may reach another goroutine or be retained, if it
// may; seen breaks cycles.
func (e *flowEngine) value(v ssa.Value, seen map[ssa.Value]bool) (paramFlow, bool) {
	if seen[v] || !mayHold(v.Type()) {
		return paramFlow{}, false
	}
	seen[v] = true
	refs := v.Referrers()
	if refs == nil {
		return paramFlow{}, false
	}
	for _, instr := range *refs {
		if p, ok := e.instr(v, instr, seen); ok {
			return p, true
		}
	}
	return paramFlow{}, false
}

func (e *flowEngine) instr(v ssa.Value, instr ssa.Instruction, seen map[ssa.Value]bool) (paramFlow, bool) {
	at := func(kind, via string) (paramFlow, bool) {
		return paramFlow{Kind: kind, Via: via + " at " + e.where(instr.Pos())}, true
	}
	switch in := instr.(type) {
	case *ssa.Go:
		return at(flowGoroutine, "a go statement")
	case *ssa.Send:
		if in.X == v {
			return at(flowGoroutine, "a channel send")
		}
	case *ssa.Select:
		for _, st := range in.States {
			if st.Send == v {
				return at(flowGoroutine, "a channel send")
			}
		}
	case *ssa.Store:
		if in.Val != v {
			return paramFlow{}, false
		}
		if base := localBase(in.Addr); base != nil {
			return e.value(base, seen)
		}
		if receiverRoot(in.Parent(), in.Addr) {
			return at(flowStoredRecv, "a store")
		}
		return at(flowStored, "a store")
	case *ssa.MapUpdate:
		if in.Key != v && in.Value != v {
			return paramFlow{}, false
		}
		if _, local := in.Map.(*ssa.MakeMap); local {
			return e.value(in.Map, seen)
		}
		return at(flowStored, "a map update")
	case *ssa.MakeClosure:
		for j, b := range in.Bindings {
			if b != v {
				continue
			}
			if p, ok := e.value(in, seen); ok {
				return p, true
			}
			if fn, ok := in.Fn.(*ssa.Function); ok && j < len(fn.FreeVars) {
				if p, ok := e.value(fn.FreeVars[j], seen); ok {
					return p, true
				}
			}
		}
	case *ssa.MakeInterface, *ssa.ChangeType, *ssa.ChangeInterface, *ssa.Convert, *ssa.Phi,
		*ssa.Slice, *ssa.TypeAssert, *ssa.MultiConvert, *ssa.SliceToArrayPointer:
		return e.value(in.(ssa.Value), seen)
	case *ssa.UnOp:
		if in.Op == token.MUL {
			return e.value(in, seen)
		}
	case *ssa.FieldAddr, *ssa.IndexAddr, *ssa.Field, *ssa.Index, *ssa.Lookup:
		return e.value(in.(ssa.Value), seen)
	case ssa.CallInstruction:
		return e.call(v, in, seen)
	}
	return paramFlow{}, false
}

// call follows v given to a call (not called itself: calling a closure
// runs it on this goroutine, and its captures are followed where it is
// made).
func (e *flowEngine) call(v ssa.Value, in ssa.CallInstruction, seen map[ssa.Value]bool) (paramFlow, bool) {
	c := in.Common()
	if c.IsInvoke() {
		return paramFlow{}, false // the dynamic type is not known here
	}
	if b, ok := c.Value.(*ssa.Builtin); ok {
		if b.Name() == "append" {
			if res := in.Value(); res != nil {
				return e.value(res, seen)
			}
		}
		return paramFlow{}, false
	}
	callee := c.StaticCallee()
	if callee == nil {
		return paramFlow{}, false
	}
	for k, a := range c.Args {
		if a != v {
			continue
		}
		if callee.Pkg == e.pkg {
			if p, ok := e.param(callee, k); ok {
				return e.intoReceiver(in, p, seen)
			}
			continue
		}
		obj, ok := callee.Object().(*types.Func)
		if !ok {
			continue
		}
		if obj.Type().(*types.Signature).Recv() != nil {
			k--
		}
		if k < 0 {
			continue
		}
		if p, ok := e.argFlow(obj, k); ok {
			p.Via = obj.Pkg().Name() + "." + obj.Name() + " at " + e.where(in.Pos()) + " → " + p.Via
			return e.intoReceiver(in, p, seen)
		}
	}
	return paramFlow{}, false
}

// mayHold reports whether a value of type t can hold a reference (a basic
// value such as an ID cannot carry a transaction).
func mayHold(t types.Type) bool {
	_, basic := t.Underlying().(*types.Basic)
	return !basic
}

// where formats pos as file:line.
func (e *flowEngine) where(pos token.Pos) string {
	if !pos.IsValid() {
		return "?"
	}
	p := e.pass.Fset.Position(pos)
	return filepath.Base(p.Filename) + ":" + itoa(p.Line)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
