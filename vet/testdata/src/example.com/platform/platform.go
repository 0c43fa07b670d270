// Package platform stands for a platform team's shared package in another
// module: NoDedupe cannot see into its functions.
package platform

import (
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// Dedupe is the team's idempotency middleware: Idempotency plus its own
// conventions.
func Dedupe(s store.Store) consumer.Middleware { return middleware.Idempotency(s) }

// Wrap returns h behind the team's standard chain.
func Wrap(h consumer.Handler, s store.Store) consumer.Handler {
	return middleware.Idempotency(s)(h)
}

// Audit records a message; it builds no handler.
func Audit(m *consumer.Message) error { return nil }

// Metrics is the team's metrics middleware: it does not deduplicate.
func Metrics() consumer.Middleware { return middleware.Logging() }
