// Package gapokparkedlocal is a correct corpus handler package (see
// vet/corpus_test.go): the handler keeps its transaction in a unit of
// work of its own, built fresh per message, which ends with it.
package gapokparkedlocal

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type unit struct {
	tx   pgx.Tx
	rows int
}

func (u *unit) write(ctx context.Context, id string) error {
	u.rows++
	_, err := u.tx.Exec(ctx, "INSERT INTO scans (id) VALUES ($1)", id)
	return err
}

type handler struct{ seen map[string]int }

func (h *handler) newUnit() *unit { return &unit{} }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	u := h.newUnit()
	u.tx = tx
	return u.write(ctx, m.ID)
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{seen: map[string]int{}}).handle)
}
