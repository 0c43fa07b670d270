package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// outsideEffect returns a description of call when it is an effect on a
// system other than the database, which the claim's transaction cannot roll
// back, or "": a request through net/http (http.Get, Post, PostForm, Head,
// (*http.Client).Do, Get, Post, PostForm, Head), a produce through franz-go
// (*kgo.Client).Produce, ProduceSync, TryProduce, or a publish through
// amqp091 (*Channel).Publish, PublishWithContext,
// PublishWithDeferredConfirm, PublishWithDeferredConfirmWithContext.
//
// What it does not catch: other clients (gRPC, SDKs of cloud services,
// other broker libraries), and effects behind a function of another package.
func outsideEffect(pass *analysis.Pass, call *ast.CallExpr) string {
	fn := callee(pass.TypesInfo, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	recv := fn.Type().(*types.Signature).Recv()
	switch fn.Pkg().Path() {
	case pathHTTP:
		switch fn.Name() {
		case "Get", "Post", "PostForm", "Head":
			if recv == nil {
				return "http." + fn.Name()
			}
			fallthrough
		case "Do":
			if recv != nil && isNamed(recv.Type(), pathHTTP, "Client") {
				return "(*http.Client)." + fn.Name()
			}
		}
	case pathKgo:
		switch fn.Name() {
		case "Produce", "ProduceSync", "TryProduce":
			if recv != nil && isNamed(recv.Type(), pathKgo, "Client") {
				return "(*kgo.Client)." + fn.Name()
			}
		}
	case pathAMQP:
		switch fn.Name() {
		case "Publish", "PublishWithContext", "PublishWithDeferredConfirm", "PublishWithDeferredConfirmWithContext":
			if recv != nil && isNamed(recv.Type(), pathAMQP, "Channel") {
				return "(*amqp091.Channel)." + fn.Name()
			}
		}
	}
	return ""
}
