package vet

import (
	"go/ast"
	"go/types"
	"strings"
	"unicode"

	"golang.org/x/tools/go/analysis"
)

// effectVerbs are the method names (or their first word) by which client
// libraries name a call that changes something on the other side: a
// send, a publish, a write to a store, a payment. Names of reads (Get,
// List, Describe, Fetch, Query, …) are not among them.
var effectVerbs = []string{
	"Send", "Publish", "Produce", "Post", "Put", "Patch", "Enqueue", "Emit", "Notify", "Deliver",
	"Charge", "Refund", "Capture", "Transfer", "Create", "Delete", "Update", "Upsert", "Insert",
	"Upload", "Write", "Push", "Dispatch", "Trigger", "Submit", "Remove", "Cancel",
}

// effectVerb reports whether name is an effect verb or starts with one
// followed by another word (SendMessage, PutObject, CreateCharge).
func effectVerb(name string) bool {
	for _, v := range effectVerbs {
		if rest, ok := strings.CutPrefix(name, v); ok && (rest == "" || unicode.IsUpper(rune(rest[0]))) {
			return true
		}
	}
	return false
}

// clientEffect returns a description of call when it is a call of a client
// library of another module that vet has no list for, named as an effect:
// a function or method of a package outside the module under analysis
// (its path starts with a domain), outside the standard library, the
// database drivers, oncely and the clients outsideEffect knows by name,
// whose first parameter is a context.Context (a call that goes over the
// network) and whose name is an effect verb (see effectVerbs). A call
// given a pgx.Tx, or an interface that runs statements, writes in the
// transaction and is not an effect.
//
// What it does not catch: a client call without a context, or named
// otherwise (Do, Execute, Call); it reports a read named as a write.
func clientEffect(pass *analysis.Pass, call *ast.CallExpr) string {
	return clientEffectOf(pass, callee(pass.TypesInfo, call), call)
}

// clientEffectOf is clientEffect for a call that runs fn.
func clientEffectOf(pass *analysis.Pass, fn *types.Func, call *ast.CallExpr) string {
	if fn == nil || fn.Pkg() == nil || !effectVerb(fn.Name()) || !foreignClient(pass, fn.Pkg().Path()) {
		return ""
	}
	sig := fn.Type().(*types.Signature)
	if sig.Params().Len() == 0 || !isNamed(sig.Params().At(0).Type(), pathContext, "Context") {
		return ""
	}
	for _, a := range call.Args {
		if t := pass.TypesInfo.TypeOf(a); t != nil && (isNamed(t, pathPgx, "Tx") || queryingInterface(t) || dbHandle(t) != "") {
			return ""
		}
	}
	return "the " + fn.Pkg().Name() + " client call " + fn.Name()
}

// foreignClient reports whether path is a package of another module that
// may be a network client: its first element is a domain, it is not of
// the module under analysis, of oncely, of a database driver or of a
// client outsideEffect knows, nor of the Go project's and observability
// libraries.
func foreignClient(pass *analysis.Pass, path string) bool {
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") {
		return false
	}
	if pass.Module != nil && pass.Module.Path != "" && (path == pass.Module.Path || strings.HasPrefix(path, pass.Module.Path+"/")) {
		return false
	}
	return !knownPackage(path)
}

// knownPackage reports whether path is of oncely, a database driver, a
// client outsideEffect knows by name, or a library of the Go project or of
// observability: judged by name, never by the heuristics.
func knownPackage(path string) bool {
	for _, known := range [...]string{
		pathModule, "github.com/jackc/", "golang.org/x/", "google.golang.org/", "go.opentelemetry.io/",
		"github.com/prometheus/", "go.uber.org/", "github.com/sirupsen/",
		pathRedis, pathNATS, pathSQS, pathSNS, pathSaram, "github.com/Shopify/sarama", pathPubSub, pathKafkaGo,
		pathKgo, pathAMQP, "github.com/lib/pq", "github.com/go-sql-driver/", "github.com/stretchr/",
	} {
		if path == strings.TrimSuffix(known, "/") || strings.HasPrefix(path, strings.TrimSuffix(known, "/")+"/") {
			return true
		}
	}
	return false
}

// ownCode reports whether the package under analysis is code of the
// module being checked, whose functions get hasEffect facts: not the
// standard library, not a versioned dependency (whose reads may call
// the same transport as its writes), not oncely nor a known client.
func ownCode(pass *analysis.Pass) bool {
	path := pass.Pkg.Path()
	if len(pass.Files) == 0 || standardLibrary(pass) || frameworkPackage(path) || knownPackage(path) {
		return false
	}
	return pass.Module == nil || pass.Module.Version == ""
}

// hasEffect is TxEscape's fact about a function of the module: it makes an
// effect outside the database (see outsideEffect and clientEffect),
// itself or through functions it calls (Via says how). A transactional
// handler calling it makes that effect: a notification client wrapped by
// a package of the team's own. At is the call that makes it (see
// factSite).
type hasEffect struct {
	Via string
	At  factSite
}

// AFact marks hasEffect as an analysis fact.
func (*hasEffect) AFact() {}

func (f *hasEffect) String() string { return "hasEffect(" + f.Via + ")" }

// exportEffects exports hasEffect for each exported function and method
// of the package that makes an effect outside the database, directly,
// through a function of the package, or through a function of another
// package with the fact.
func exportEffects(pass *analysis.Pass, decls *funcDecls, exempt map[*ast.CallExpr]bool) {
	if !ownCode(pass) {
		return // oncely's relays and adapters make effects by design; dependencies are judged by name
	}
	via := reachVia(pass, decls, func(call *ast.CallExpr) string {
		if e := outsideEffect(pass, call, exempt); e != "" {
			return e
		}
		return clientEffect(pass, call)
	}, func(fn *types.Func) route {
		if f := importedEffect(pass, fn); f != nil {
			return route(*f)
		}
		return route{}
	})
	for fn := range decls.decls {
		if fn.Exported() {
			if r := via(fn); r.Via != "" {
				pass.ExportObjectFact(fn, &hasEffect{Via: r.Via, At: r.At})
			}
		}
	}
}

// importedEffect returns fn's hasEffect fact when fn is declared in
// another package, or nil.
func importedEffect(pass *analysis.Pass, fn *types.Func) *hasEffect {
	if fn.Pkg() == nil || fn.Pkg() == pass.Pkg {
		return nil
	}
	var f hasEffect
	if pass.ImportObjectFact(fn.Origin(), &f) {
		return &f
	}
	return nil
}
