// Package lateokpgxbatch is a held-out corpus package (fifth round): a
// batch handler sending its inserts as one pgx.Batch on the claim's
// transaction.
package lateokpgxbatch

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func HandleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	for _, m := range msgs {
		b.Queue("INSERT INTO views (id) VALUES ($1)", m.ID)
	}
	return tx.SendBatch(ctx, b).Close()
}

func New() consumer.Handler { return postgres.BatchHandlerFunc(HandleBatch) }
