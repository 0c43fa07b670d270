package vet

import (
	"go/types"
)

// NoDedupe gives a local variable assigned where it cannot see (a value of
// a call with several results, tx, err := pool.Begin(ctx); a write through
// its address) the benefit of the doubt only when the variable's type can
// carry a handler or a middleware into the chain (see carriesChain): a
// pgx.Tx, an error or a decoded message in a handler's body holds no claim,
// so a handler that begins its own transaction is judged by what it
// visibly uses.
//
// What it does not catch: a handler or middleware hidden in a value whose
// type can hold one (an interface with no methods, a struct with a Handler
// field, a function returning one) assigned that way: unknown.

// unseen answers for v, assigned where NoDedupe cannot see: unknown when its
// type can carry a handler or a middleware, no otherwise.
func (d *dedupe) unseen(v *types.Var) tri {
	if carriesChain(v.Type(), d.handlerIfaces(), map[types.Type]bool{}) {
		return unknown
	}
	return no
}

// handlerIfaces returns consumer.Handler and consumer.BatchHandler, those
// the package can see.
func (d *dedupe) handlerIfaces() []*types.Interface {
	var out []*types.Interface
	for _, name := range []string{"Handler", "BatchHandler"} {
		if tn, ok := lookup(d.pass, pathConsumer, name).(*types.TypeName); ok {
			if iface, ok := tn.Type().Underlying().(*types.Interface); ok {
				out = append(out, iface)
			}
		}
	}
	return out
}

// carriesChain reports whether a value of type t can hold a handler or a
// middleware: a consumer Handler, BatchHandler or Middleware or a function
// building one (see buildsHandler), a type implementing Handler or
// BatchHandler, an interface with no methods, a type parameter, or a
// pointer, slice, array, map, channel, struct or function result holding
// one.
func carriesChain(t types.Type, ifaces []*types.Interface, seen map[types.Type]bool) bool {
	t = types.Unalias(t)
	if seen[t] {
		return false
	}
	seen[t] = true
	if _, ok := t.(*types.TypeParam); ok || buildsHandler(t, 2) {
		return true
	}
	for _, iface := range ifaces {
		if types.Implements(t, iface) || types.Implements(types.NewPointer(t), iface) {
			return true
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Interface:
		return u.Empty()
	case *types.Pointer:
		return carriesChain(u.Elem(), ifaces, seen)
	case *types.Slice:
		return carriesChain(u.Elem(), ifaces, seen)
	case *types.Array:
		return carriesChain(u.Elem(), ifaces, seen)
	case *types.Chan:
		return carriesChain(u.Elem(), ifaces, seen)
	case *types.Map:
		return carriesChain(u.Key(), ifaces, seen) || carriesChain(u.Elem(), ifaces, seen)
	case *types.Struct:
		for f := range u.Fields() {
			if carriesChain(f.Type(), ifaces, seen) {
				return true
			}
		}
	case *types.Signature:
		for r := range u.Results().Variables() {
			if carriesChain(r.Type(), ifaces, seen) {
				return true
			}
		}
	}
	return false
}
