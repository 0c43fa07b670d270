// Package nextoksqlctx is a held-out corpus package (third round):
// generated queries built from the claim's transaction per message.
package nextoksqlctx

import (
	"context"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	pool *pgxpool.Pool // for the readiness probe
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return orderdb.New(tx).InsertOrder(ctx, m.ID, 900)
}

func (h *handler) Ready(ctx context.Context) error { return h.pool.Ping(ctx) }

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{pool: pool}).handle)
}
