// Package fanout runs a slice of steps concurrently and waits for them.
package fanout

import (
	"context"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// All runs every step on its own goroutine and returns the first error,
// after all of them finished.
func All(ctx context.Context, steps ...func(ctx context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range steps {
		g.Go(func() error { return s(gctx) })
	}
	return g.Wait()
}

// ExecAll sends the statements concurrently on tx and waits for them.
func ExecAll(ctx context.Context, tx pgx.Tx, stmts []string) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range stmts {
		g.Go(func() error {
			_, err := tx.Exec(gctx, s)
			return err
		})
	}
	return g.Wait()
}
