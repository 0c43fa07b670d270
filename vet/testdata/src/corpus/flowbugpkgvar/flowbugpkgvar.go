// Package flowbugpkgvar is a corpus package: an order recorded through the
// platform's package-level queries, which Init bound to the pool.
package flowbugpkgvar

import (
	"context"
	"strconv"

	"corpus/internal/platformdb"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func record(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	cents, err := strconv.ParseInt(m.ID[len(m.ID)-2:], 10, 64)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO order_events (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return platformdb.Orders.InsertOrder(ctx, m.ID, cents) // want `outside the claim's transaction`
}

// New builds the handler.
func New() consumer.Handler { return postgres.HandlerFunc(record) }
