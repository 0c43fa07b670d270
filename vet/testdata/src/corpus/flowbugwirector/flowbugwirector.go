// Package flowbugwirector is a corpus package: the refunds service's main
// wiring, behind the Postgres claim, a handler whose constructor returns
// consumer.Handler and whose Handle writes through the pool.
package flowbugwirector

import (
	"corpus/internal/refunds"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Start builds the refunds consumer.
func Start(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	var h consumer.Handler = refunds.NewIssuer(pool)
	cfg := consumer.Config{Name: "refunds"}
	return consumer.New(src, h, cfg, middleware.Idempotency(st)) // want `outside the claim's transaction`
}
