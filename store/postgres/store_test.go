package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store"
	pgstore "github.com/oncely/oncely/store/postgres"
)

func TestProcessCommitsEffectWithClaim(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	dup, err := s.Process(ctx, "ledger", "m1", effect("m1"))
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 1, countEffects(t, db, "m1"))
	require.True(t, claimed(t, db, "ledger", "m1"))

	// The effect and the claim were written by one transaction.
	var effTx, claimTx int64
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT txid FROM effects WHERE id = 'm1'").Scan(&effTx))
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT xmin::text::bigint FROM processed_messages WHERE message_id = 'm1'").Scan(&claimTx))
	require.Equal(t, effTx&0xffffffff, claimTx)

	// A redelivery is a duplicate: fn does not run.
	called := false
	dup, err = s.Process(ctx, "ledger", "m1", func(context.Context) error { called = true; return nil })
	require.NoError(t, err)
	require.True(t, dup)
	require.False(t, called)
	require.Equal(t, 1, countEffects(t, db, "m1"))

	// Another consumer keeps its own claims.
	dup, err = s.Process(ctx, "audit", "m1", effect("m1"))
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 2, countEffects(t, db, "m1"))
}

func TestProcessHandlerErrorRollsBackClaim(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	dup, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
		require.NoError(t, effect("m1")(ctx))
		return errBoom
	})
	require.False(t, dup)
	require.Same(t, errBoom, err, "the handler's error is returned unchanged")
	require.Equal(t, 0, countEffects(t, db, "m1"))
	require.False(t, claimed(t, db, "ledger", "m1"), "the claim is released")

	// The retry runs the handler again and commits.
	dup, err = s.Process(ctx, "ledger", "m1", effect("m1"))
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 1, countEffects(t, db, "m1"))

	// Markers pass through untouched.
	perm := consumer.Permanent(errBoom)
	_, err = s.Process(ctx, "ledger", "m2", func(context.Context) error { return perm })
	require.Same(t, perm, err)
	require.Equal(t, int32(0), db.Pool.Stat().AcquiredConns())
}

func TestProcessHandlerSQLErrorStaysHandlers(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	_, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, "SELECT 1/0")
		return err
	})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22012", pgErr.Code)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), "a statement error is the handler's, not an outage")
	require.False(t, claimed(t, db, "ledger", "m1"))
}

func TestProcessHandlerSwallowedSQLError(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	_, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
		require.NoError(t, effect("m1")(ctx))
		tx, _ := pgstore.Tx(ctx)
		_, _ = tx.Exec(ctx, "SELECT 1/0") // error ignored: the transaction is aborted
		return nil
	})
	require.Error(t, err)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err))
	require.Contains(t, err.Error(), "rolled back")
	require.Equal(t, 0, countEffects(t, db, "m1"))
	require.False(t, claimed(t, db, "ledger", "m1"))
}

func TestProcessHandlerConnectionErrorIsUnavailable(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	// The handler's own session is terminated under it (57P01 admin_shutdown).
	_, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
		require.NoError(t, effect("m1")(ctx))
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
		return err
	})
	require.Error(t, err)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err), "got %v", err)
	require.Equal(t, 0, countEffects(t, db, "m1"))
	require.False(t, claimed(t, db, "ledger", "m1"))

	// A connection-class error wrapped by the handler (even with %v, which
	// loses the chain) is still an outage once the connection is gone; a
	// server error of class 08 is one by its code.
	_, err = s.Process(ctx, "ledger", "m2", func(context.Context) error {
		return &pgconn.PgError{Code: "08006", Message: "connection failure"}
	})
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
	_, err = s.Process(ctx, "ledger", "m3", func(context.Context) error {
		return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	})
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), "serialization failures are contention, not outages")
}

func TestProcessStoreFailuresAreUnavailable(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{NoMigrate: true}) // no claims table
	s := newStore(t, db, pgstore.Config{})
	called := false
	_, err := s.Process(ctxT(t), "ledger", "m1", func(context.Context) error { called = true; return nil })
	require.Error(t, err)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
	require.False(t, called)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the cause stays inspectable")
	require.Equal(t, "42P01", pgErr.Code)
	require.Error(t, requireProbedDependency(t, s, err), "without its claims table the store is down: an outage, not the message's failure")

	// An unreachable database.
	p, pool := proxied(t, db, 2)
	p.Refuse()
	s2, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
	closeAtEnd(t, s2)
	require.NoError(t, err)
	_, err = s2.Process(ctxT(t), "ledger", "m1", func(context.Context) error { called = true; return nil })
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err), "got %v", err)
	require.False(t, called)
	require.True(t, pgstore.IsConnectionError(err))
	require.Error(t, requireProbedDependency(t, s2, err), "an unreachable database probes down")
}

func TestProcessCommitFailureIsNeverSuccess(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	p, pool := proxied(t, db, 2)
	s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
	closeAtEnd(t, s)
	require.NoError(t, err)

	_, err = s.Process(ctxT(t), "ledger", "m1", func(ctx context.Context) error {
		if err := effect("m1")(ctx); err != nil {
			return err
		}
		p.Cut() // the connection dies before COMMIT
		return nil
	})
	require.Error(t, err)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err), "got %v", err)
	require.Contains(t, err.Error(), "commit")
	require.NoError(t, requireProbedDependency(t, s, err), "the connection died but the database answers a probe")
	require.Equal(t, 0, countEffects(t, db, "m1"))
	require.False(t, claimed(t, db, "ledger", "m1"))
}

func TestProcessCommitRejectedIsHandlersError(t *testing.T) {
	db := pgtest.New(t)
	ctx := ctxT(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE uniq (k int, CONSTRAINT uniq_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`)
	require.NoError(t, err)
	s := newStore(t, db, pgstore.Config{})

	_, err = s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, "INSERT INTO uniq VALUES (1), (1)") // checked at COMMIT
		return err
	})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23505", pgErr.Code)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), "the handler's work was rejected; nothing committed")
	require.False(t, claimed(t, db, "ledger", "m1"))
}

func TestProcessPanicReleasesConnection(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	require.PanicsWithValue(t, "handler bug", func() {
		_, _ = s.Process(ctxT(t), "ledger", "m1", func(ctx context.Context) error {
			_ = effect("m1")(ctx)
			panic("handler bug")
		})
	})
	require.Equal(t, int32(0), db.Pool.Stat().AcquiredConns())
	require.False(t, claimed(t, db, "ledger", "m1"))
	require.Equal(t, 0, countEffects(t, db, "m1"))
}

func TestProcessRejectsBadKeys(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)
	called := 0
	fn := func(context.Context) error { called++; return nil }

	for name, key := range map[string][2]string{
		"missing-id":    {"ledger", ""},
		"invalid-id":    {"ledger", strings.Repeat("x", store.MaxMessageIDLength+1)},
		"no-consumer":   {"", "m1"},
		"multibyte-257": {"ledger", strings.Repeat("é", 128) + "x"}, // 257 bytes
	} {
		_, err := s.Process(ctx, key[0], key[1], fn)
		require.Error(t, err, name)
		require.Equal(t, consumer.ClassPermanent, consumer.Classify(err), name)
	}
	require.Zero(t, called)

	longest := strings.Repeat("x", store.MaxMessageIDLength)
	dup, err := s.Process(ctx, "ledger", longest, effect(longest))
	require.NoError(t, err)
	require.False(t, dup)
	require.True(t, claimed(t, db, "ledger", longest))
}

func TestTxAccessorAndHandlerFunc(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	_, ok := pgstore.Tx(ctx)
	require.False(t, ok)

	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		require.ErrorIs(t, tx.Commit(ctx), pgstore.ErrTxOwned)
		require.ErrorIs(t, tx.Rollback(ctx), pgstore.ErrTxOwned)
		// A nested transaction is a savepoint inside the store's.
		nested, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = nested.Exec(ctx, "INSERT INTO effects (id) VALUES ('rolled-back')")
		require.NoError(t, err)
		require.NoError(t, nested.Rollback(ctx))
		_, err = tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID)
		return err
	})
	msg := &consumer.Message{ID: "m1"}
	dup, err := s.Process(ctx, "ledger", msg.ID, func(ctx context.Context) error { return h.Handle(ctx, msg) })
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 1, countEffects(t, db, "m1"))
	require.Equal(t, 0, countEffects(t, db, "rolled-back"))

	// Without the store in the chain: held as an outage, not dead-lettered.
	err = h.Handle(ctx, msg)
	require.ErrorIs(t, err, pgstore.ErrNoTx)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
}

func TestCloseRefusesNewCalls(t *testing.T) {
	db := pgtest.New(t)
	s, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema})
	closeAtEnd(t, s)
	require.NoError(t, err)
	require.NoError(t, s.Close(ctxT(t)))
	require.NoError(t, s.Close(ctxT(t)))
	_, err = s.Process(ctxT(t), "ledger", "m1", func(context.Context) error { return errors.New("must not run") })
	require.ErrorIs(t, err, pgstore.ErrClosed)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
}

func TestProcessHandlerTimeoutIsNotAnOutage(t *testing.T) {
	db := pgtest.New(t)
	s := newStore(t, db, pgstore.Config{})
	_, err := s.Process(ctxT(t), "ledger", "m1", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		tx, _ := pgstore.Tx(ctx)
		_, err := tx.Exec(ctx, "SELECT pg_sleep(10)")
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), "a handler timeout is the handler's failure; got %v", err)
	require.False(t, claimed(t, db, "ledger", "m1"))
}
