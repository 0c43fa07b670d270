// Package routes seeds escape's reports of the routes other than a go
// statement by which the transaction leaves the handler: channels and
// errgroups.
package routes

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type work struct{ tx pgx.Tx }

type handler struct {
	out  chan work
	ctxs chan context.Context
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.out <- work{tx: tx} // want `the handler's transaction tx is sent on a channel`
	h.ctxs <- ctx         // want `the handler's context ctx is sent on a channel`
	var g errgroup.Group
	g.Go(func() error { // want `a goroutine of g.Go uses the handler's transaction tx`
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	g.Go(func() error { return ctx.Err() }) // the context alone, in a joined group: fine
	var wg sync.WaitGroup
	wg.Go(func() { _ = len(m.ID) }) // computes only: fine
	wg.Wait()
	return g.Wait()
}

var _ = postgres.HandlerFunc((&handler{}).handle)
