// Package gapbugselectfunc is a corpus handler package with a bug (see
// vet/corpus_test.go): the points are awarded by a database function,
// called with a SELECT through the pool's QueryRow; the function writes,
// outside the claim's transaction.
package gapbugselectfunc

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
	if _, err := tx.Exec(ctx, "INSERT INTO purchases_seen (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	var balance int64
	return a.pool.QueryRow(ctx, "SELECT award_points($1, $2)", m.Key, pts).Scan(&balance) // want `\*pgxpool.Pool.QueryRow runs outside the claim's transaction`
}

// Handler returns the points handler, behind the Postgres claim.
func Handler(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&awarder{pool: pool}).handle)
}
