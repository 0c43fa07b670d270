// Package lastokgenerictx is a held-out corpus package (fourth round): a
// generic repository built per message over the claim's transaction.
package lastokgenerictx

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type Repo[T any] struct {
	db    execer
	table string
}

func NewRepo[T any](db execer, table string) *Repo[T] { return &Repo[T]{db: db, table: table} }

func (r *Repo[T]) Put(ctx context.Context, id string, v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = r.db.Exec(ctx, "INSERT INTO "+r.table+" (id, doc) VALUES ($1, $2)", id, b)
	return err
}

type invoice struct{ ID string }

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return NewRepo[invoice](tx, "invoices").Put(ctx, m.ID, invoice{ID: m.ID})
}

func New() consumer.Handler { return postgres.HandlerFunc(Handle) }
