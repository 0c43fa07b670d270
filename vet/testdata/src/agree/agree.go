// Package agree is the corpus of chains that vet_test.TestVetAndNewAgree
// runs through NoDedupe and, built for real, through consumer.New and the
// per-message claim witness. Each function builds one chain; its name is the
// chain's name in the test's table.
package agree

import (
	"context"
	"strconv"

	"example.com/platform"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

func bare(src consumer.Source, h consumer.Handler) {
	consumer.New(src, h, consumer.Config{Name: "test"}) // want `consumer.New without an idempotency middleware`
}

func loggingOnly(src consumer.Source, h consumer.Handler) {
	consumer.New(src, h, consumer.Config{Name: "test"}, middleware.Logging()) // want `consumer.New without an idempotency middleware`
}

func nilMiddleware(src consumer.Source, h consumer.Handler) {
	var optional consumer.Middleware                                                    // an optional dedupe, turned off
	consumer.New(src, h, consumer.Config{Name: "test"}, middleware.Logging(), optional) // want `consumer.New without an idempotency middleware`
}

func givenToNew(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, h, consumer.Config{Name: "test"}, middleware.Logging(), middleware.Idempotency(st))
}

func preChained(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, consumer.Chain(h, middleware.Logging(), middleware.Idempotency(st)), consumer.Config{Name: "test"})
}

func nestedChain(src consumer.Source, h consumer.Handler, st store.Store) {
	inner := consumer.Chain(h, middleware.Idempotency(st))
	consumer.New(src, consumer.Chain(inner, middleware.Logging()), consumer.Config{Name: "test"}, middleware.Logging())
}

// teamDedupe is a team's own middleware around Idempotency.
func teamDedupe(st store.Store) consumer.Middleware {
	idem := middleware.Idempotency(st)
	return func(next consumer.Handler) consumer.Handler {
		claimed := idem(next)
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error { return claimed.Handle(ctx, m) })
	}
}

func teamMiddleware(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, h, consumer.Config{Name: "test"}, teamDedupe(st))
}

func platformMiddleware(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, h, consumer.Config{Name: "test"}, middleware.Logging(), platform.Dedupe(st))
}

func optOut(src consumer.Source, h consumer.Handler) {
	consumer.New(src, h, consumer.Config{Name: "test", Duplicates: consumer.AllowDuplicates("upserts by payment ID")})
}

func optOutBesideIdempotency(src consumer.Source, h consumer.Handler, st store.Store) {
	c := consumer.Config{Name: "test", Duplicates: consumer.AllowDuplicates("upserts by payment ID")}
	consumer.New(src, h, c, middleware.Idempotency(st)) // want `Config.Duplicates allows duplicates beside an idempotency middleware`
}

// flagged routes messages with key "bypass" around the claim, as a feature
// flag would.
func flagged(st store.Store) consumer.Middleware {
	idem := middleware.Idempotency(st)
	return func(next consumer.Handler) consumer.Handler {
		claimed := idem(next)
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if m.ID == "bypass" {
				return next.Handle(ctx, m)
			}
			return claimed.Handle(ctx, m)
		})
	}
}

func flagBypass(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, h, consumer.Config{Name: "test"}, flagged(st))
}

func markWithoutClaim(src consumer.Source, h consumer.Handler) {
	mark := func(next consumer.Handler) consumer.Handler { return consumer.Deduplicating(next) } // want `consumer.Deduplicating marks a handler`
	consumer.New(src, h, consumer.Config{Name: "test"}, mark)
}

func platformBesideClaim(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, consumer.Chain(h, platform.Metrics(), middleware.Idempotency(st)), consumer.Config{Name: "test"})
}

// platformMetricsOnly holds platform.Metrics, which platformBesideClaim
// chains beside a claim, and no claim.
func platformMetricsOnly(src consumer.Source, h consumer.Handler) {
	consumer.New(src, consumer.Chain(h, middleware.Logging(), platform.Metrics()), consumer.Config{Name: "test"}) // want `consumer.New without an idempotency middleware`
}

// listed hands back the middleware it is given.
func listed(mws ...consumer.Middleware) []consumer.Middleware { return mws }

func forwardedLogging(src consumer.Source, h consumer.Handler) {
	consumer.New(src, h, consumer.Config{Name: "test"}, listed(middleware.Logging())...) // want `consumer.New without an idempotency middleware`
}

func forwardedClaim(src consumer.Source, h consumer.Handler, st store.Store) {
	consumer.New(src, h, consumer.Config{Name: "test"}, listed(middleware.Logging(), middleware.Idempotency(st))...)
}

// tupleInHandler's handler assigns a local from a call with two results;
// the local's type holds no handler.
func tupleInHandler(src consumer.Source) {
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		n, err := strconv.Atoi(m.ID)
		_ = n
		return err
	})
	consumer.New(src, h, consumer.Config{Name: "test"}) // want `consumer.New without an idempotency middleware`
}
