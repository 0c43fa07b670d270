// Package platform is a platform team's shared consumer package: the
// organisation's standard middleware chain.
package platform

import (
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// Standard is the organisation's chain: logging, then idempotency.
func Standard(s store.Store) []consumer.Middleware {
	return []consumer.Middleware{middleware.Logging(), middleware.Idempotency(s)}
}

// Dedupe wraps middleware.Idempotency with the team's conventions.
func Dedupe(s store.Store) consumer.Middleware { return middleware.Idempotency(s) }

// Metrics counts messages; it does not deduplicate.
func Metrics() consumer.Middleware { return middleware.Logging() }
