// Package gapokselectfunc is a correct corpus handler package (see
// vet/corpus_test.go): the points function is called through the claim's
// transaction, the member's row locked there with FOR UPDATE; the pool
// only reads the current total with built-in aggregates.
package gapokselectfunc

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type awarder struct {
	pool *pgxpool.Pool
}

func (a *awarder) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	pts, err := strconv.Atoi(string(m.Body))
	if err != nil {
		return consumer.Permanent(err)
	}
	var total int64
	if err := a.pool.QueryRow(ctx, "SELECT coalesce(sum(points), 0) FROM point_entries WHERE member = $1", m.Key).Scan(&total); err != nil {
		return err
	}
	if total+int64(pts) > 1_000_000 {
		return consumer.Permanent(strconv.ErrRange)
	}
	var tier string
	if err := tx.QueryRow(ctx, "SELECT tier FROM members WHERE id = $1 FOR UPDATE", m.Key).Scan(&tier); err != nil {
		return err
	}
	var balance int64
	return tx.QueryRow(ctx, "SELECT award_points($1, $2)", m.Key, pts).Scan(&balance)
}

// Handler returns the points handler, behind the Postgres claim.
func Handler(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&awarder{pool: pool}).handle)
}
