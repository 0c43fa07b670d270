// Package bugerrgrouptx is a corpus handler package with a bug (see vet/corpus_test.go).
package bugerrgrouptx

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

func handle(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, m := range msgs {
		g.Go(func() error { // want `handler's transaction`
			_, err := tx.Exec(gctx, "INSERT INTO events (id) VALUES ($1)", m.ID)
			return err
		})
	}
	return g.Wait()
}

var Handler = postgres.BatchHandlerFunc(handle)
