// Package gapbugsetter is a corpus handler package with a bug (see
// vet/corpus_test.go): the projector's querier is set through a setter,
// called with the pool when the consumer is wired; the handler writes the
// projection through it.
package gapbugsetter

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type projector struct {
	db querier
}

// SetDB sets the querier the projector writes through.
func (p *projector) SetDB(db querier) { p.db = db }

func (p *projector) project(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO events_seen (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	_, err := p.db.Exec(ctx, "UPDATE balances_view SET total = total + 1 WHERE account = $1", m.Key) // want `p.db.Exec runs outside the claim's transaction`
	return err
}

// Start wires the projector behind the Postgres claim.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	p := &projector{}
	p.SetDB(pool)
	src, err := broker.Source(ctx, "ledger", "balances")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(p.project), consumer.Config{Name: "balances"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
