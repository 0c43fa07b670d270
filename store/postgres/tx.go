package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

type txKey struct{}

// handlerTx is the transaction a handler receives: the store's transaction
// (or, in batch mode, the batch's) with Commit and Rollback refused, because
// the store ends it. Begin still works and opens a nested savepoint.
type handlerTx struct{ pgx.Tx }

// Commit returns ErrTxOwned: the store commits when the handler returns nil.
func (handlerTx) Commit(context.Context) error { return ErrTxOwned }

// Rollback returns ErrTxOwned: the store rolls back when the handler fails.
func (handlerTx) Rollback(context.Context) error { return ErrTxOwned }

// withTx returns ctx carrying tx, which must refuse Commit and Rollback
// (handlerTx or batchTx).
func withTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Tx returns the transaction Process runs a handler in, and whether ctx has
// one. Statements on it commit together with the message's claim, or not at
// all. Its Commit and Rollback return ErrTxOwned: the handler's return value
// decides. The transaction is valid only until the handler returns and, like
// every pgx.Tx, must not be used from several goroutines at once.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// HandlerFunc adapts f, a handler that takes the store's transaction
// explicitly, to consumer.Handler. Use it inside a chain that has the
// idempotency middleware with a postgres Store; without a transaction in the
// context the handler returns ErrNoTx wrapped with consumer.Unavailable, so
// the mistake holds deliveries (and opens the breaker) instead of
// dead-lettering them.
func HandlerFunc(f func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		tx, ok := Tx(ctx)
		if !ok {
			return consumer.Unavailable(ErrNoTx)
		}
		return f(ctx, tx, msg)
	})
}
