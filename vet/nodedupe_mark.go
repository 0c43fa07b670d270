package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// markWithoutClaim reports each use of consumer.Deduplicating in a package
// that never reports a claim (references neither consumer.MarkClaimed nor
// consumer.MarkDuplicate), outside oncely's own packages.
//
// The bug it prevents: Deduplicating only marks a handler; it claims
// nothing. consumer.New takes a marked chain for one that deduplicates, so
// a team that marks its handler to get past the start-up check has no
// dedupe at all, and the runtime's claim witness dead-letters every message
// it handles (reason no-claim). Deduplicating is exported for idempotency
// middleware written outside oncely, which claims in its own store and
// reports it with consumer.MarkClaimed; a package doing that is not
// reported. The suggested fix drops the mark (New then refuses the chain
// with ErrNoIdempotency until middleware.Idempotency(store) is added).
func markWithoutClaim(pass *analysis.Pass) {
	mark := lookup(pass, pathConsumer, "Deduplicating")
	if mark == nil || frameworkPackage(pass.Pkg.Path()) {
		return
	}
	claims := []types.Object{lookup(pass, pathConsumer, "MarkClaimed"), lookup(pass, pathConsumer, "MarkDuplicate")}
	var uses []*ast.Ident
	for id, obj := range pass.TypesInfo.Uses {
		switch {
		case obj == nil:
		case obj == claims[0] || obj == claims[1]:
			return // the package's middleware reports its claims
		case obj == mark:
			uses = append(uses, id)
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 || callee(pass.TypesInfo, call) != mark {
				return true
			}
			arg := call.Args[0]
			fix := analysis.SuggestedFix{
				Message: "drop the mark (add middleware.Idempotency(store) to the chain)",
				TextEdits: []analysis.TextEdit{
					{Pos: call.Pos(), End: arg.Pos()},
					{Pos: arg.End(), End: call.End()},
				},
			}
			reportFix(pass, "nodedupe", call.Pos(), fix, "consumer.Deduplicating marks a handler as deduplicating, but nothing in this package claims (consumer.MarkClaimed): New accepts the chain, and every message it handles is dead-lettered with reason no-claim; use middleware.Idempotency(store), or call consumer.MarkClaimed(ctx) where your middleware commits its claim")
			for i, id := range uses {
				if id.Pos() >= call.Pos() && id.End() <= call.End() {
					uses = append(uses[:i], uses[i+1:]...)
					break
				}
			}
			return true
		})
	}
	for _, id := range uses { // a method value or an argument: Deduplicating not called here
		reportFix(pass, "nodedupe", id.Pos(), analysis.SuggestedFix{}, "consumer.Deduplicating marks a handler as deduplicating, but nothing in this package claims (consumer.MarkClaimed): every message of such a chain is dead-lettered with reason no-claim; use middleware.Idempotency(store)")
	}
}
