package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// batchEffects inserts one effect row per fresh message in one statement.
func batchEffects(ids []string) func(ctx context.Context, fresh []int) error {
	return func(ctx context.Context, fresh []int) error {
		tx, ok := pgstore.Tx(ctx)
		if !ok {
			return errors.New("no tx in context")
		}
		rows := make([]string, len(fresh))
		for n, i := range fresh {
			rows[n] = ids[i]
		}
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) SELECT unnest($1::text[])", rows)
		return err
	}
}

// TestProcessBatchConcurrentCopies runs n concurrent ProcessBatch calls, each
// claiming the same 40 IDs in its own shuffled order with repeats, and a
// few IDs of its own. Bugs caught: a batch claim that runs an effect twice
// under concurrency, claims taken in batch order (two batches with
// overlapping IDs in different orders deadlock: 40P01), a repeat inside a
// batch handed to the handler twice.
func TestProcessBatchConcurrentCopies(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := pgtest.New(t, pgtest.Options{MaxConns: 10})
			createEffects(t, db)
			s := newStore(t, db, pgstore.Config{})
			ctx := ctxT(t)
			shared := make([]string, 40)
			for i := range shared {
				shared[i] = fmt.Sprintf("shared-%02d", i)
			}
			var fresh atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for c := range n {
				ids := slices.Clone(shared)
				rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				ids = append(ids, ids[3], fmt.Sprintf("own-%d-a", c), fmt.Sprintf("own-%d-b", c))
				wg.Go(func() {
					got, err := s.ProcessBatch(ctx, "ledger", ids, batchEffects(ids))
					fresh.Add(int64(len(got)))
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			counts := effectCounts(t, db)
			require.Len(t, counts, 40+2*n)
			for id, c := range counts {
				require.Equal(t, 1, c, "effects of %s", id)
			}
			require.EqualValues(t, 40+2*n, fresh.Load(), "fresh positions over all calls")
		})
	}
}

// TestProcessBatchFreshAndDuplicates checks the positions ProcessBatch
// reports and that a failed batch leaves no claim. Bugs caught: duplicates
// (claimed before, or repeated in the batch) passed to the handler, a
// handler error that keeps the claims (the retry would skip the batch) or
// the effects, a BatchError wrapped so the runtime cannot read it.
func TestProcessBatchFreshAndDuplicates(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)

	_, err := s.Process(ctx, "ledger", "b", effect("b"))
	require.NoError(t, err)
	ids := []string{"a", "b", "c", "a", "d"}
	var seen []int
	fail := consumer.BatchError{Failed: map[int]error{1: errBoom}}
	_, err = s.ProcessBatch(ctx, "ledger", ids, func(ctx context.Context, fresh []int) error {
		seen = fresh
		if err := batchEffects(ids)(ctx, fresh); err != nil {
			return err
		}
		return fail
	})
	be, ok := consumer.AsBatchError(err)
	require.True(t, ok, "the handler's BatchError comes back unchanged: %v", err)
	require.Equal(t, fail.Failed, be.Failed)
	require.Equal(t, []int{0, 2, 4}, seen, "fresh: first positions of IDs not claimed before")
	require.False(t, claimed(t, db, "ledger", "a"), "a failed batch keeps no claim")
	require.Zero(t, countEffects(t, db, "a"), "a failed batch keeps no effect")

	got, err := s.ProcessBatch(ctx, "ledger", ids, batchEffects(ids))
	require.NoError(t, err)
	require.Equal(t, []int{0, 2, 4}, got)
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, effectCounts(t, db))

	calls := 0
	got, err = s.ProcessBatch(ctx, "ledger", ids, func(context.Context, []int) error { calls++; return nil })
	require.NoError(t, err)
	require.Empty(t, got)
	require.Zero(t, calls, "a batch of duplicates runs no handler")
}

// TestProcessBatchRefusals checks the errors that are the messages' own.
// Bugs caught: a bad ID of one message reported as an outage (the whole
// consumer would pause for one message), or passed to SQL.
func TestProcessBatchRefusals(t *testing.T) {
	db := pgtest.New(t)
	s := newStore(t, db, pgstore.Config{})
	ctx := ctxT(t)
	never := func(context.Context, []int) error { t.Error("handler ran"); return nil }

	_, err := s.ProcessBatch(ctx, "ledger", []string{"ok", "", "also-ok"}, never)
	be, ok := consumer.AsBatchError(err)
	require.True(t, ok, "%v", err)
	require.Len(t, be.Failed, 1)
	require.Equal(t, consumer.ClassPermanent, consumer.Classify(be.Failed[1]))

	_, err = s.ProcessBatch(ctx, "ledger", []string{"ok", "bad-\xff-utf8"}, never)
	require.Error(t, err)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err), "a value the database rejects is the batch's failure, bisected to its message: %v", err)
	require.False(t, claimed(t, db, "ledger", "ok"))
}

// TestBatchHandlerFuncNeedsTx checks the wiring mistake's route. Bug
// caught: a BatchHandlerFunc outside the idempotency middleware running
// without a transaction, or dead-lettering the batch.
func TestBatchHandlerFuncNeedsTx(t *testing.T) {
	h := pgstore.BatchHandlerFunc(func(context.Context, pgx.Tx, []*consumer.Message) error { return nil })
	err := h.HandleBatch(context.Background(), []*consumer.Message{{ID: "x"}})
	require.ErrorIs(t, err, pgstore.ErrNoTx)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
}
