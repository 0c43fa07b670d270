// Package gapoksetter is a correct corpus handler package (see
// vet/corpus_test.go): the long-lived projector, set to the pool, serves
// reads; the handler builds a projector per message, set to the claim's
// transaction, and writes through it.
package gapoksetter

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

// SetDB sets the querier the projector reads and writes through.
func (p *projector) SetDB(db querier) { p.db = db }

func (p *projector) bump(ctx context.Context, account string) error {
	_, err := p.db.Exec(ctx, "UPDATE balances_view SET total = total + 1 WHERE account = $1", account)
	return err
}

// Total reads an account's total, for the API.
func (p *projector) Total(ctx context.Context, account string) (int64, error) {
	var n int64
	err := p.db.QueryRow(ctx, "SELECT total FROM balances_view WHERE account = $1", account).Scan(&n)
	return n, err
}

func project(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO events_seen (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	view := &projector{}
	view.SetDB(tx)
	return view.bump(ctx, m.Key)
}

// Start wires the projector behind the Postgres claim and returns the
// pool-bound one for the API.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) (*projector, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	api := &projector{}
	api.SetDB(pool)
	src, err := broker.Source(ctx, "ledger", "balances")
	if err != nil {
		return nil, err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(project), consumer.Config{Name: "balances"}, middleware.Idempotency(st))
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Run(ctx) }()
	return api, nil
}
