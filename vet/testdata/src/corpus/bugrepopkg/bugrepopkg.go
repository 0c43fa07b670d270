// Package bugrepopkg is a corpus handler package with a bug (see vet/corpus_test.go).
package bugrepopkg

import (
	"context"
	"corpus/internal/accounts"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ accounts *accounts.Repo }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if err := h.accounts.Credit(ctx, tx, m.ID, 100); err != nil {
		return err
	}
	return h.accounts.Touch(ctx, m.ID) // want `outside the claim's transaction`
}

func New(a *accounts.Repo) consumer.Handler {
	h := &handler{accounts: a}
	return postgres.HandlerFunc(h.handle)
}
