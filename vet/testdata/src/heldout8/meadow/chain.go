package meadow

import (
	"log/slog"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"

	"heldout8/shared/obs"
)

// withClaims is the apiary's name for the claim step.
func withClaims(st store.Store) consumer.Middleware { return middleware.Idempotency(st) }

// stack is every meadow consumer's chain: observability first, the claim
// innermost.
func stack(log *slog.Logger, st store.Store) []consumer.Middleware {
	mws := []consumer.Middleware{obs.Timing(log), middleware.Logging()}
	return append(mws, withClaims(st))
}

// settings is every meadow consumer's configuration.
func settings(name string) consumer.Config {
	return consumer.Config{Name: name, Concurrency: 4}
}
