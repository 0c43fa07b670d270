package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// In batch mode the killed connection is the whole batch's: the killer's
// batch-mates run again one by one and commit once, so only the killer gets
// the error (naming the store, which probes up).
func TestBatchKilledConnectionFailsOnlyTheKiller(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	ids := []string{"a", "b", "killer", "d"}
	s := batchStore(t, db, len(ids))
	runs := map[string]*atomic.Int32{}
	for _, id := range ids {
		runs[id] = new(atomic.Int32)
	}
	var killErr atomic.Value
	out := runBatch(t, db, s, ids, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			runs[id].Add(1)
			if err := effect(id)(ctx); err != nil || id != "killer" {
				return err
			}
			tx, _ := pgstore.Tx(ctx)
			var ok bool
			//oncely:allow txescape the test kills the handler's backend from another connection
			if err := db.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", int64(tx.Conn().PgConn().PID())).Scan(&ok); err != nil || !ok {
				killErr.Store(fmt.Sprintf("terminate: %v, %v", ok, err))
			}
			_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ('after')")
			return err
		}
	})
	require.Nil(t, killErr.Load())
	for _, o := range out {
		if o.id == "killer" {
			require.Error(t, o.err)
			require.NoError(t, requireProbedDependency(t, s, o.err))
			require.EqualValues(t, 1, runs[o.id].Load(), "the killer is not run again by the store")
			continue
		}
		require.NoError(t, o.err, o.id)
		require.False(t, o.duplicate, o.id)
		require.True(t, o.visible, o.id)
	}
	require.Equal(t, map[string]int{"a": 1, "b": 1, "d": 1}, effectCounts(t, db))
	require.False(t, claimed(t, db, "ledger", "killer"))
	require.Equal(t, 3, countClaims(t, db))
}

// A handler that releases its own savepoint and then fails leaves the batch's
// transaction unable to undo it alone, on a live connection: the store rolls
// the whole transaction back, handing its connection back to the pool (here
// the pool's only one), before it pings the database and runs the other
// messages again one by one; only the offender fails.
func TestBatchUndoFailureOnLiveConnectionFailsOnlyTheOffender(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	ids := []string{"a", "b", "bad", "d"}
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
	s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema, BatchSize: len(ids), BatchLinger: 10 * time.Second, Logger: quiet})
	closeAtEnd(t, s)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	out := runBatch(t, db, s, ids, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := effect(id)(ctx); err != nil || id != "bad" {
				return err
			}
			tx, _ := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT oncely_msg"); err != nil {
				return err
			}
			return errBoom
		}
	})
	for _, o := range out {
		if o.id == "bad" {
			require.ErrorIs(t, o.err, errBoom)
			require.Equal(t, consumer.ClassRetryable, consumer.Classify(o.err))
			continue
		}
		require.NoError(t, o.err, o.id)
		require.False(t, o.duplicate, o.id)
	}
	require.Equal(t, map[string]int{"a": 1, "b": 1, "d": 1}, effectCounts(t, db))
	require.Equal(t, 3, countClaims(t, db))
}
