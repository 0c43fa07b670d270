// Package refunds is a team's message handlers, built by constructors that
// return consumer.Handler and wired by the service's main package.
package refunds

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type issuer struct{ pool *pgxpool.Pool }

// Handle records the refund through the pool.
func (i *issuer) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := i.pool.Exec(ctx, "INSERT INTO refunds (payment_id) VALUES ($1)", m.ID)
	return err
}

// NewIssuer returns the refund handler.
func NewIssuer(pool *pgxpool.Pool) consumer.Handler {
	if pool == nil {
		panic("refunds: nil pool")
	}
	return &issuer{pool: pool}
}

type ledger struct{}

func (ledger) post(ctx context.Context, m *consumer.Message) error {
	tx, _ := postgres.Tx(ctx)
	_, err := tx.Exec(ctx, "INSERT INTO refund_ledger (payment_id) VALUES ($1)", m.ID)
	return err
}

// NewLedger returns the handler that posts refunds in the claim's
// transaction.
func NewLedger() consumer.Handler { return consumer.HandlerFunc(ledger{}.post) }
