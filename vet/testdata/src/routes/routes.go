// Package routes seeds escape's reports of the routes other than a go
// statement by which the transaction leaves the handler: channels and
// errgroups, fields that outlive the handler, goroutines not joined.
package routes

import (
	"context"
	"sync"
	"time"

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

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error { // want handle:`paramFlows\(goroutine:a channel send at routes.go:26;goroutine:a channel send at routes.go:25;goroutine:sync.Go at routes.go:34 → its goroutine;\)`
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

type flusher struct {
	tx      pgx.Tx
	pending []func() error
	wg      sync.WaitGroup
}

type unit struct{ tx pgx.Tx }

func check(ctx context.Context, tx pgx.Tx) error { return nil }

func (f *flusher) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error { // want handle:`paramFlows\(stored in the receiver:a store at routes.go:53;stored in the receiver:a store at routes.go:52;\)`
	f.tx = tx                                    // want `the handler's transaction tx is stored in f.tx, which outlives the handler`
	f.pending = append(f.pending, func() error { // want `stored in f.pending`
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	u := &unit{}
	u.tx = tx // a local unit of work: fine
	var checked error
	func() { checked = check(ctx, tx) }() // an error holds no transaction: fine
	_ = checked
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the context alone, joined below: fine
		defer wg.Done()
		_ = ctx.Err()
	}()
	go func() { // want `goroutine captures the handler's transaction tx`
		defer wg.Done()
		_, _ = tx.Exec(ctx, "SELECT 1")
	}()
	wg.Wait()
	f.wg.Add(1)
	go func() { // want `goroutine captures the handler's context ctx`
		defer f.wg.Done() // waited on elsewhere, after the handler returned
		_ = ctx.Err()
	}()
	return nil
}

var _ = postgres.HandlerFunc((&flusher{}).handle)

type keeper struct {
	ctx  context.Context
	open sync.Map
	name string
}

func (k *keeper) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error { // want handle:`paramFlows\(stored in the receiver:a store at routes.go:90;\)`
	k.ctx = ctx            // want `the handler's context ctx is stored in k.ctx`
	k.open.Store(m.ID, tx) // want `the handler's transaction tx is stored in k.open.Store`
	k.name = m.ID          // a message ID: fine
	var local sync.Map
	local.Store(m.ID, tx) // a map of the handler's own: fine
	return nil
}

var _ = postgres.HandlerFunc((&keeper{}).handle)

func later(ctx context.Context, tx pgx.Tx, m *consumer.Message) error { // want later:`paramFlows\(goroutine:time.AfterFunc at routes.go:101 → its timer.s goroutine;goroutine:time.AfterFunc at routes.go:101 → its timer.s goroutine;goroutine:time.AfterFunc at routes.go:102 → its timer.s goroutine;\)`
	time.AfterFunc(time.Hour, func() { _, _ = tx.Exec(ctx, "SELECT 1") }) // want `the function given to time.AfterFunc uses the handler's transaction tx`
	time.AfterFunc(time.Hour, func() { _ = len(m.ID) })                   // uses neither: fine
	done := make(chan struct{})
	go func() { // the context alone, waited for on done: fine
		defer close(done)
		_ = ctx.Err()
	}()
	<-done
	return nil
}

var _ = postgres.HandlerFunc(later)
