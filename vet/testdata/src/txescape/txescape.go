// Package txescape seeds the txescape analyzer's cases.
package txescape

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// ---- must be reported ----

// 1. A write through the pool in a postgres.HandlerFunc literal.
func poolInHandlerFunc(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := pool.Exec(ctx, "INSERT INTO audit VALUES ($1)", msg.ID) // want `\*pgxpool.Pool.Exec runs outside the claim's transaction \(in a transactional handler\)`
		return err
	})
}

// 1b. A write through the pool in a postgres.BatchHandlerFunc literal.
func poolInBatchHandlerFunc(pool *pgxpool.Pool) consumer.Handler {
	return postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		_, err := pool.Exec(ctx, "INSERT INTO audit VALUES ($1)", len(msgs)) // want `\*pgxpool.Pool.Exec runs outside the claim's transaction \(in a transactional handler\)`
		return err
	})
}

// 1c. A read through the pool in the function given to ProcessBatch.
func poolInProcessBatch(ctx context.Context, s *postgres.Store, pool *pgxpool.Pool) error {
	_, err := s.ProcessBatch(ctx, "ledger", []string{"a"}, func(ctx context.Context, fresh []int) error {
		_, err := pool.Exec(ctx, "SELECT 1") // want `\*pgxpool.Pool.Exec runs outside`
		return err
	})
	return err
}

type ledger struct {
	pool *pgxpool.Pool
	db   *sql.DB
	conn *pgx.Conn
}

// 2. A read through the pool in a handler that uses postgres.Tx.
func (l *ledger) Handle(ctx context.Context, msg *consumer.Message) error { // want Handle:`runsOutside`
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return nil
	}
	var n int
	if err := l.pool.QueryRow(ctx, "SELECT count(*) FROM entries").Scan(&n); err != nil { // a read: commits and repeats nothing
		return err
	}
	// 3. Through a helper of the package.
	if err := audit(ctx, l.pool, msg.ID); err != nil { // want `\*pgxpool.Pool.Exec runs outside the claim's transaction \(reached from a transactional handler through audit\)`
		return err
	}
	// 4. Through a closure held in a package variable.
	if err := notify(ctx, l.pool); err != nil { // want `\*pgxpool.Pool.SendBatch runs outside .*through notify`
		return err
	}
	// 5. Through pgx.BeginFunc: the pool opens a transaction of its own.
	if err := pgx.BeginFunc(ctx, l.pool, func(pgx.Tx) error { return nil }); err != nil { // want `\*pgxpool.Pool passed as interface\{Begin\(ctx context.Context\) \(pgx.Tx, error\)\}`
		return err
	}
	// 6. database/sql.
	if _, err := l.db.ExecContext(ctx, "DELETE FROM pending WHERE id = $1", msg.ID); err != nil { // want `\*sql.DB.ExecContext runs outside`
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO entries VALUES ($1)", msg.ID)
	return err
}

func audit(ctx context.Context, pool *pgxpool.Pool, id string) error {
	_, err := pool.Exec(ctx, "INSERT INTO audit VALUES ($1)", id)
	return err
}

var notify = func(ctx context.Context, pool *pgxpool.Pool) error {
	_ = pool.SendBatch(ctx, &pgx.Batch{})
	return nil
}

// 7. A *pgx.Conn in a Store's Process function.
func (l *ledger) process(ctx context.Context, s *postgres.Store, id string) error {
	_, err := s.Process(ctx, "ledger", id, func(ctx context.Context) error {
		_, err := l.conn.Exec(ctx, "UPDATE totals SET n = n + 1") // want `\*pgx.Conn.Exec runs outside`
		return err
	})
	return err
}

// 8. A method value given to postgres.HandlerFunc, opening a transaction.
func (l *ledger) handler() consumer.Handler { return postgres.HandlerFunc(l.handle) }

func (l *ledger) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	other, err := l.pool.Begin(ctx) // want `\*pgxpool.Pool.Begin runs outside`
	if err != nil {
		return err
	}
	_, err = other.Exec(ctx, "SELECT 1")
	return err
}

// 9. An allow comment without a reason silences nothing.
func unexplained(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		//oncely:allow txescape
		_, err := pool.Exec(ctx, "SELECT 1") // want `needs a reason`
		return err
	})
}

// ---- must not be reported ----

// The handler's own transaction, its connection, and helpers given it.
func good(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		if _, err := tx.Exec(ctx, "INSERT INTO entries VALUES ($1)", msg.ID); err != nil {
			return err
		}
		if _, err := tx.Conn().Exec(ctx, "SELECT 1"); err != nil { // the transaction's own connection
			return err
		}
		if err := pool.Ping(ctx); err != nil { // no statement
			return err
		}
		_ = fmt.Sprint(pool) // not an interface that runs statements
		return apply(ctx, tx, msg.ID)
	})
}

func apply(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "UPDATE totals SET n = n + 1 WHERE id = $1", id)
	return err
}

// Outside any handler, the pool is the right handle.
func setup(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS entries (id text)")
	return err
}

// A type of this package named like pgxpool's is not pgxpool's.
type Pool struct{}

func (Pool) Exec(ctx context.Context, sql string) error { return nil }

func lookalike(p Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		return p.Exec(ctx, "INSERT INTO x VALUES (1)")
	})
}

// Asking whether a transaction exists does not make a handler.
func inHandler(ctx context.Context, pool *pgxpool.Pool) error {
	if _, ok := postgres.Tx(ctx); ok {
		return nil
	}
	_, err := pool.Exec(ctx, "SELECT 1")
	return err
}

// A reviewed exception, with its reason.
func watched(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		//oncely:allow txescape the test observes the claim's locks from another connection
		_, err := pool.Exec(ctx, "SELECT 1")
		return err
	})
}

// A plain handler, not transactional, writes through the pool.
func plain(pool *pgxpool.Pool) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return apply(ctx, tx, msg.ID) })
	})
}
