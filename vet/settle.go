package vet

import (
	"go/ast"
	"go/constant"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// Settle reports user code that settles deliveries itself or lets a broker
// client settle them, in a package that builds an oncely consumer.
//
// The bug it prevents: the runtime acknowledges a delivery only after the
// handler chain returned and its effects committed, and publishes retry and
// dead-letter copies before acknowledging the original. Code that calls a
// consumer.Delivery's Ack, Retry or DeadLetter itself settles before the
// effect is durable (a crash then loses the message) or settles twice. A
// broker client that commits or acknowledges on its own — franz-go's
// auto-commit, which is on unless kgo.DisableAutoCommit is given, or an
// amqp091 Channel.Consume with autoAck — loses every message that was
// received but not processed when the process dies.
//
// It reports:
//
//   - calls of Ack, Retry or DeadLetter on a value whose type implements
//     consumer.Delivery;
//   - kgo.AutoCommitInterval and kgo.AutoCommitMarks, and kgo.NewClient
//     given kgo.ConsumerGroup but not kgo.DisableAutoCommit (when the
//     options are visible: arguments, or a local slice's literals and
//     appends);
//   - amqp091's Channel.Consume and ConsumeWithContext with an autoAck
//     argument that is not the constant false.
//
// Scope: only packages that build an oncely consumer — they reference
// consumer.New or adapters.Open — and are not oncely itself. oncely's own
// packages (the module github.com/oncely/oncely outside examples/: the
// runtime, the adapters, middleware, stores, internal harnesses and the
// CLI) settle deliveries and configure broker clients by design, so Settle
// skips them. A third-party adapter in another module settles deliveries
// too; Settle skips it as long as it does not call consumer.New or
// adapters.Open itself (its tests may, in a separate _test package).
var Settle = &analysis.Analyzer{
	Name: "settle",
	Doc:  "report user code that settles oncely deliveries itself or enables broker auto-commit/auto-ack",
	URL:  "https://github.com/oncely/oncely/blob/main/docs/teams.md#oncely-vet",
	Run:  runSettle,
}

func runSettle(pass *analysis.Pass) (any, error) {
	if pass.TypesInfo == nil || len(pass.Files) == 0 {
		return nil, nil // a dependency loaded from export data: no source, no facts
	}
	if frameworkPackage(pass.Pkg.Path()) || !buildsConsumer(pass) {
		return nil, nil
	}
	var delivery *types.Interface
	if obj := lookup(pass, pathConsumer, "Delivery"); obj != nil {
		delivery, _ = obj.Type().Underlying().(*types.Interface)
	}
	for _, f := range pass.Files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				stack = append(stack, n) // never popped: enclosing checks positions
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				if fn == nil {
					break
				}
				switch {
				case delivery != nil && settles(pass, n, fn, delivery):
					report(pass, "settle", n.Pos(), "%s settles a delivery outside the runtime: oncely acks only after the handler's effects committed (and publishes retry and dead-letter copies first); return nil, an error, consumer.Permanent or consumer.RetryAfter instead", fn.Name())
				case isFunc(fn, pathKgo, "AutoCommitInterval"), isFunc(fn, pathKgo, "AutoCommitMarks"):
					report(pass, "settle", n.Pos(), "kgo.%s configures auto-commit: offsets are committed whether or not their messages were processed, so a crash loses them; oncely's Kafka adapter commits after processing (kgo.DisableAutoCommit)", fn.Name())
				case isFunc(fn, pathKgo, "NewClient"):
					if encl := enclosing(stack, n); encl != nil && kgoAutoCommits(pass, funcBody(encl), n) {
						report(pass, "settle", n.Pos(), "kgo.NewClient with kgo.ConsumerGroup and without kgo.DisableAutoCommit auto-commits offsets whether or not their messages were processed, so a crash loses them; add kgo.DisableAutoCommit() or consume through oncely's Kafka adapter")
					}
				case isMethod(fn, pathAMQP, "Channel", "Consume") && len(n.Args) > 2 && !constFalse(pass, n.Args[2]),
					isMethod(fn, pathAMQP, "Channel", "ConsumeWithContext") && len(n.Args) > 3 && !constFalse(pass, n.Args[3]):
					report(pass, "settle", n.Pos(), "Channel.%s with autoAck not false: RabbitMQ forgets each message as it is sent, so a crash loses what was not processed; pass false and ack after processing, or consume through oncely's RabbitMQ adapter", fn.Name())
				}
			}
			return true
		})
	}
	return nil, nil
}

// buildsConsumer reports whether the package references consumer.New or
// adapters.Open.
func buildsConsumer(pass *analysis.Pass) bool {
	targets := []types.Object{lookup(pass, pathConsumer, "New"), lookup(pass, pathAdapters, "Open")}
	for _, obj := range pass.TypesInfo.Uses {
		for _, t := range targets {
			if t != nil && obj == t {
				return true
			}
		}
	}
	return false
}

// settles reports whether call calls Ack, Retry or DeadLetter on a value
// whose type implements consumer.Delivery.
func settles(pass *analysis.Pass, call *ast.CallExpr, fn *types.Func, delivery *types.Interface) bool {
	switch fn.Name() {
	case "Ack", "Retry", "DeadLetter":
	default:
		return false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	s := pass.TypesInfo.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return false
	}
	recv := s.Recv()
	return types.Implements(recv, delivery) || types.Implements(types.NewPointer(recv), delivery)
}

// constFalse reports whether e is the constant false.
func constFalse(pass *analysis.Pass, e ast.Expr) bool {
	tv := pass.TypesInfo.Types[e]
	return tv.Value != nil && tv.Value.Kind() == constant.Bool && !constant.BoolVal(tv.Value)
}

// kgoAutoCommits reports whether the kgo.NewClient call is visibly given
// kgo.ConsumerGroup and not kgo.DisableAutoCommit. Options it cannot see
// (a parameter's slice, a field) make it answer false.
func kgoAutoCommits(pass *analysis.Pass, body *ast.BlockStmt, call *ast.CallExpr) bool {
	group, disabled, opaque := false, false, false
	var visit func(e ast.Expr, spread bool)
	visit = func(e ast.Expr, spread bool) {
		e = ast.Unparen(e)
		if !spread {
			c, ok := e.(*ast.CallExpr)
			if !ok {
				opaque = true
				return
			}
			fn := callee(pass.TypesInfo, c)
			switch {
			case fn == nil:
				opaque = true
			case isFunc(fn, pathKgo, "ConsumerGroup"):
				group = true
			case isFunc(fn, pathKgo, "DisableAutoCommit"):
				disabled = true
			case fn.Pkg() != nil && fn.Pkg().Path() != pathKgo:
				opaque = true // a helper returning options
			}
			return
		}
		if c, ok := e.(*ast.CompositeLit); ok {
			for _, el := range c.Elts {
				visit(el, false)
			}
			return
		}
		id, ok := e.(*ast.Ident)
		v, _ := pass.TypesInfo.Uses[id].(*types.Var)
		if !ok || v == nil || body == nil || v.Pos() < body.Pos() || v.Pos() > body.End() {
			opaque = true
			return
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if lid, ok := l.(*ast.Ident); ok && pass.TypesInfo.ObjectOf(lid) == v {
						if len(n.Lhs) != len(n.Rhs) {
							opaque = true
							continue
						}
						r := ast.Unparen(n.Rhs[i])
						if rc, ok := r.(*ast.CallExpr); ok && pass.TypesInfo.Types[rc.Fun].IsBuiltin() {
							for j, a := range rc.Args[1:] {
								if aid, ok := ast.Unparen(a).(*ast.Ident); ok && pass.TypesInfo.Uses[aid] == v {
									continue
								}
								visit(a, rc.Ellipsis != 0 && j == len(rc.Args)-2)
							}
							continue
						}
						visit(r, true)
					}
				}
			case *ast.ValueSpec:
				for i, nid := range n.Names {
					if pass.TypesInfo.Defs[nid] == v && i < len(n.Values) {
						visit(n.Values[i], true)
					}
				}
			}
			return true
		})
	}
	for i, a := range call.Args {
		visit(a, call.Ellipsis != 0 && i == len(call.Args)-1)
	}
	return group && !disabled && !opaque
}
