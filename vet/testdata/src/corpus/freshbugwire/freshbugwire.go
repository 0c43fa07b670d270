// Package freshbugwire is a held-out corpus package (second round): a
// service's main wiring a handler of another package, which writes through
// the pool, behind the Postgres claim.
package freshbugwire

import (
	"corpus/internal/inventory"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func Run(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	h := inventory.NewHandler(pool)
	return consumer.New(src, h, consumer.Config{Name: "inventory"}, middleware.Idempotency(st)) // want `outside the claim's transaction`
}
