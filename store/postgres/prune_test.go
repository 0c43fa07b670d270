package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// ageClaims moves the claims of ids back in time by age.
func ageClaims(t *testing.T, db *pgtest.DB, age time.Duration, ids ...string) {
	t.Helper()
	_, err := db.Pool.Exec(ctxT(t), "UPDATE processed_messages SET processed_at = now() - make_interval(secs => $1) WHERE message_id = ANY($2)",
		age.Seconds(), ids)
	require.NoError(t, err)
}

func countClaims(t *testing.T, db *pgtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(ctxT(t), "SELECT count(*) FROM processed_messages").Scan(&n))
	return n
}

func TestPruneDeletesOldClaimsInBatches(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{Retention: 24 * time.Hour, PruneBatchSize: 3})
	ctx := ctxT(t)
	var old []string
	for i := range 10 {
		id := fmt.Sprint("m", i)
		_, err := s.Process(ctx, "ledger", id, effect(id))
		require.NoError(t, err)
		if i < 7 {
			old = append(old, id)
		}
	}
	ageClaims(t, db, 25*time.Hour, old...)
	ageClaims(t, db, 23*time.Hour, "m7") // inside the window

	n, err := s.Prune(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 7, n, "7 claims over 3 statements of at most 3")
	require.Equal(t, 3, countClaims(t, db))
	for _, id := range []string{"m7", "m8", "m9"} {
		require.True(t, claimed(t, db, "ledger", id))
	}

	n, err = s.Prune(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// A pruned message runs again if delivered again: why Retention must
	// exceed the longest redelivery delay.
	dup, err := s.Process(ctx, "ledger", "m0", effect("m0"))
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 2, countEffects(t, db, "m0"))
	dup, err = s.Process(ctx, "ledger", "m8", effect("m8"))
	require.NoError(t, err)
	require.True(t, dup)
}

func TestPruneExactMultipleOfBatch(t *testing.T) {
	db := pgtest.New(t)
	s := newStore(t, db, pgstore.Config{Retention: time.Hour, PruneBatchSize: 2})
	ctx := ctxT(t)
	ids := []string{"a", "b", "c", "d"}
	for _, id := range ids {
		_, err := s.Process(ctx, "ledger", id, func(context.Context) error { return nil })
		require.NoError(t, err)
	}
	ageClaims(t, db, 2*time.Hour, ids...)
	n, err := s.Prune(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	require.Zero(t, countClaims(t, db))
}

func TestRunPruner(t *testing.T) {
	db := pgtest.New(t)
	var logs envtest.Buffer
	s := newStore(t, db, pgstore.Config{Retention: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	_, err := s.Process(ctx, "ledger", "old", func(context.Context) error { return nil })
	require.NoError(t, err)
	ageClaims(t, db, 2*time.Hour, "old")

	done := make(chan error, 1)
	go func() { done <- s.RunPruner(ctx, 10*time.Millisecond) }()
	require.Eventually(t, func() bool { return countClaims(t, db) == 0 }, 10*time.Second, 10*time.Millisecond)

	// It keeps running: a claim that ages later is pruned on a later tick.
	_, err = s.Process(ctx, "ledger", "later", func(context.Context) error { return nil })
	require.NoError(t, err)
	ageClaims(t, db, 2*time.Hour, "later")
	require.Eventually(t, func() bool { return countClaims(t, db) == 0 }, 10*time.Second, 10*time.Millisecond)

	cancel()
	require.True(t, errors.Is(<-done, context.Canceled))
	require.Contains(t, logs.String(), "pruned claims")
}

// TestBackgroundPrunerKeepsTableBounded: under steady load, with nothing but
// New's defaults besides a short retention and interval, the claims table
// stays bounded: each round's claims are gone before a few more rounds have
// passed. Catches: a store that never prunes unless someone calls Prune.
func TestBackgroundPrunerKeepsTableBounded(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{Retention: 50 * time.Millisecond, PruneInterval: 20 * time.Millisecond})
	ctx := ctxT(t)
	const rounds, perRound = 20, 50
	most := 0
	for r := range rounds {
		for i := range perRound {
			id := fmt.Sprintf("r%d-m%d", r, i)
			_, err := s.Process(ctx, "ledger", id, effect(id))
			require.NoError(t, err)
		}
		most = max(most, countClaims(t, db))
		// The load goes on once the pruner caught up with all but this
		// round (bounded: 5 s).
		deadline := time.Now().Add(5 * time.Second)
		for countClaims(t, db) > perRound && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		require.LessOrEqual(t, countClaims(t, db), perRound, "round %d: the pruner did not catch up", r)
	}
	require.LessOrEqual(t, most, 2*perRound, "the table grew past two rounds of claims")
	require.NoError(t, s.Close(ctx))
	n := countClaims(t, db)
	time.Sleep(100 * time.Millisecond) // Close stopped the pruner: nothing more is deleted
	require.Equal(t, n, countClaims(t, db))
}

// TestNoPruningKeepsClaims: opting out is explicit and honoured.
func TestNoPruningKeepsClaims(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{Retention: time.Millisecond, PruneInterval: time.Millisecond, NoPruning: true})
	ctx := ctxT(t)
	for i := range 5 {
		id := fmt.Sprint("m", i)
		_, err := s.Process(ctx, "ledger", id, effect(id))
		require.NoError(t, err)
	}
	time.Sleep(50 * time.Millisecond) // fifty intervals
	require.Equal(t, 5, countClaims(t, db))
}
