// Package flowokwirector is a correct corpus package: the refunds ledger's
// main wiring a handler of another package that writes through the
// claim's transaction.
package flowokwirector

import (
	"corpus/internal/refunds"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Start builds the ledger consumer.
func Start(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return consumer.New(src, refunds.NewLedger(), consumer.Config{Name: "refund-ledger"}, middleware.Idempotency(st))
}
