// Package nextbugrepoiface is a held-out corpus package (third round): a
// repository interface field filled with another package's repository,
// which writes through the pool.
package nextbugrepoiface

import (
	"context"

	"corpus/internal/accounts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type accountStore interface {
	Credit(ctx context.Context, tx pgx.Tx, account string, cents int64) error
	Touch(ctx context.Context, account string) error
}

type handler struct{ accounts accountStore }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if err := h.accounts.Credit(ctx, tx, m.ID, 25); err != nil {
		return err
	}
	return h.accounts.Touch(ctx, m.ID) // want `outside the claim's transaction`
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{accounts: accounts.NewRepo(pool)}
	return postgres.HandlerFunc(h.handle)
}
