// Package freshoklocaltx is a held-out corpus package (second round): a
// per-message unit of work that holds the transaction for the handler's
// duration only.
package freshoklocaltx

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type unitOfWork struct {
	tx  pgx.Tx
	ops []string
}

func (u *unitOfWork) add(op string) { u.ops = append(u.ops, op) }

func (u *unitOfWork) flush(ctx context.Context) error {
	for _, op := range u.ops {
		if _, err := u.tx.Exec(ctx, "INSERT INTO ops (op) VALUES ($1)", op); err != nil {
			return err
		}
	}
	return nil
}

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	u := &unitOfWork{tx: tx}
	u.add("reserve " + m.ID)
	u.add("charge " + m.ID)
	return u.flush(ctx)
}

func New() consumer.Handler { return postgres.HandlerFunc(Handle) }
