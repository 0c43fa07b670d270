// Package okerrgroup is a corpus handler package (see vet/corpus_test.go).
package okerrgroup

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

func score(s string) int { return len(s) }

// handle scores in parallel without the transaction, then writes once.
func handle(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	scores := make([]int, len(msgs))
	var g errgroup.Group
	for i, m := range msgs {
		g.Go(func() error {
			scores[i] = score(m.ID)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO scores (n) VALUES ($1)", len(scores))
	return err
}

var _ = postgres.BatchHandlerFunc(handle)
