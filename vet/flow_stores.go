package vet

// Where a parameter's value is stored: in a local of the function, in the
// method's receiver, or anywhere else (see paramFlows).

import (
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// intoReceiver resolves a callee's store into its receiver for the caller:
// a receiver local to the caller is followed, the caller's own receiver
// stays flowStoredRecv, anything else is a store.
func (e *flowEngine) intoReceiver(in ssa.CallInstruction, p paramFlow, seen map[ssa.Value]bool) (paramFlow, bool) {
	if p.Kind != flowStoredRecv {
		return p, true
	}
	c := in.Common()
	if len(c.Args) == 0 {
		p.Kind = flowStored
		return p, true
	}
	recv := c.Args[0]
	if base := localBase(recv); base != nil {
		return e.value(base, seen)
	}
	if !receiverRoot(in.Parent(), recv) {
		p.Kind = flowStored
	}
	return p, true
}

// receiverRoot reports whether addr is, or points into, the receiver of
// method f.
func receiverRoot(f *ssa.Function, addr ssa.Value) bool {
	if f == nil || f.Signature.Recv() == nil || len(f.Params) == 0 {
		return false
	}
	for {
		switch a := addr.(type) {
		case *ssa.FieldAddr:
			addr = a.X
		case *ssa.IndexAddr:
			addr = a.X
		case *ssa.UnOp:
			addr = a.X
		case *ssa.Field:
			addr = a.X
		case *ssa.Alloc: // the receiver spilled, captured by a closure
			return spills(a, f.Params[0])
		default:
			return addr == f.Params[0]
		}
	}
}

// localBase returns the local allocation (a variable or composite value of
// the function) that addr points into, following fields and elements, or
// nil when addr is not local (a field of a parameter, a package-level
// variable).
func localBase(addr ssa.Value) ssa.Value {
	for {
		switch a := addr.(type) {
		case *ssa.Alloc:
			return a
		case *ssa.FieldAddr:
			addr = a.X
		case *ssa.IndexAddr:
			if _, ok := a.X.Type().Underlying().(*types.Slice); ok {
				if s, ok := a.X.(*ssa.Slice); ok {
					addr = s.X
					continue
				}
				return nil
			}
			addr = a.X
		default:
			return nil
		}
	}
}

// spills reports whether the local a holds the parameter p (a parameter a
// closure captures is spilled into a local).
func spills(a *ssa.Alloc, p *ssa.Parameter) bool {
	for _, r := range *a.Referrers() {
		if st, ok := r.(*ssa.Store); ok && st.Addr == a && st.Val == p {
			return true
		}
	}
	return false
}
