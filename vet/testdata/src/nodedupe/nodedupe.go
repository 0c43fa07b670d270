// Package nodedupe seeds the nodedupe analyzer's cases.
package nodedupe

import (
	"context"

	"example.com/platform"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

var (
	src consumer.Source
	h   consumer.Handler
	s   store.Store
)

func logging() consumer.Middleware { return middleware.Logging() }

func dedupe(st store.Store) consumer.Middleware { return middleware.Idempotency(st) }

// Idempotency of this package is no idempotency middleware.
func Idempotency(st store.Store) consumer.Middleware { return middleware.Logging() }

func metricsMiddleware(next consumer.Handler) consumer.Handler { return next }

// ---- must be reported ----

func noMiddleware() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}) // want `consumer.New without an idempotency middleware`
}

func otherMiddlewareOnly() {
	cfg := consumer.Config{Name: "ledger"}
	cfg.Name = "billing"
	_, _ = consumer.New(src, h, cfg, middleware.Logging(), metricsMiddleware) // want `consumer.New without an idempotency middleware`
}

func sliceWithout() {
	mws := []consumer.Middleware{middleware.Logging()}
	mws = append(mws, metricsMiddleware)
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, mws...) // want `consumer.New without an idempotency middleware`
}

func wrapperWithout() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, logging()) // want `consumer.New without an idempotency middleware`
}

func lookalike() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, Idempotency(s)) // want `consumer.New without an idempotency middleware`
}

func inClosure() func() {
	return func() {
		var cfg = consumer.Config{Name: "ledger"}
		_, _ = consumer.New(src, h, cfg) // want `consumer.New without an idempotency middleware`
	}
}

// ---- must not be reported ----

func direct() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, middleware.Logging(), middleware.Idempotency(s))
}

func conditional(dedup bool) {
	var mws []consumer.Middleware
	if dedup {
		mws = append(mws, middleware.Idempotency(s))
	}
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, mws...)
}

func optOutLiteral() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger", Duplicates: consumer.AllowDuplicates("upserts by payment ID")})
}

func optOutField() {
	cfg := consumer.Config{Name: "ledger"}
	cfg.Duplicates = consumer.AllowDuplicates("upserts by payment ID")
	_, _ = consumer.New(src, h, cfg, middleware.Logging())
}

func wrapperWith() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, dedupe(s))
}

func unknownConfig(cfg consumer.Config) {
	_, _ = consumer.New(src, h, cfg) // the caller's config may opt out
}

func unknownMiddleware(mws ...consumer.Middleware) {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, mws...) // the caller's middleware may deduplicate
}

func preWrapped() {
	_, _ = consumer.New(src, middleware.Idempotency(s)(h), consumer.Config{Name: "ledger"})
}

func custom() {
	mine := func(next consumer.Handler) consumer.Handler { return consumer.Deduplicating(next) } // want `consumer.Deduplicating marks a handler as deduplicating, but nothing in this package claims`
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, mine)
}

func allowed() {
	//oncely:allow nodedupe the chain is assembled by the platform's wrapper at run time
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"})
}

// ---- another module's functions are unknown, never proof ----

func platformMiddleware() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, platform.Dedupe(s))
}

func platformMiddlewareInSlice() {
	mws := []consumer.Middleware{middleware.Logging(), platform.Dedupe(s)}
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, mws...)
}

func platformHandler() {
	_, _ = consumer.New(src, platform.Wrap(h, s), consumer.Config{Name: "ledger"})
}

func platformThroughLocalHelper() {
	_, _ = consumer.New(src, h, consumer.Config{Name: "ledger"}, teamChain())
}

func teamChain() consumer.Middleware { return platform.Dedupe(s) }

// A handler whose body calls another module is still a plain handler.
func platformCallInHandler() {
	hf := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error { return platform.Audit(m) })
	_, _ = consumer.New(src, hf, consumer.Config{Name: "ledger"}, middleware.Logging()) // want `consumer.New without an idempotency middleware`
}
