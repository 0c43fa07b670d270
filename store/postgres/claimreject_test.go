package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// badIDs are message IDs the database refuses to store (SQLSTATE 22021):
// the runtime dead-letters them at the door, but a direct caller may pass them.
var badIDs = map[string]string{"NUL byte": "nul\x00id", "invalid UTF-8": "bad\xffutf8"}

// requireRejected asserts that err is the database's data error for the
// message, not an outage.
func requireRejected(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var ue *consumer.UnavailableError
	require.False(t, errors.As(err, &ue), "a data error is the message's, never unavailable: %v", err)
	require.Equal(t, consumer.ClassRetryable, consumer.Classify(err))
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22021", pgErr.Code)
}

func TestClaimDataErrorIsTheMessages(t *testing.T) {
	for name, id := range badIDs {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			s := newStore(t, db, pgstore.Config{})
			ctx := ctxT(t)
			called := false
			_, err := s.Process(ctx, "ledger", id, func(context.Context) error { called = true; return nil })
			requireRejected(t, err)
			require.False(t, called)
			dup, err := s.Process(ctx, "ledger", "ok", effect("ok"))
			require.NoError(t, err)
			require.False(t, dup)
			require.Equal(t, 1, countClaims(t, db))
		})
	}
}

// In batch mode a message whose claim the database rejects fails alone: the
// rest of its batch runs and commits, and a message committed before is still
// a duplicate.
func TestBatchClaimDataErrorFailsOnlyThatMessage(t *testing.T) {
	for name, bad := range badIDs {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			_, err := newStore(t, db, pgstore.Config{}).Process(ctxT(t), "ledger", "d", effect("d"))
			require.NoError(t, err)

			ids := []string{"a", "b", bad, "d", "e"}
			s := batchStore(t, db, len(ids))
			var runs atomic.Int32
			out := runBatch(t, db, s, ids, func(id string) func(context.Context) error {
				return func(ctx context.Context) error {
					runs.Add(1)
					return effect(id)(ctx)
				}
			})
			for _, o := range out {
				switch o.id {
				case bad:
					requireRejected(t, o.err)
					require.False(t, o.duplicate, "a rejected message is not a duplicate")
				case "d":
					require.NoError(t, o.err)
					require.True(t, o.duplicate)
				default:
					require.NoError(t, o.err, o.id)
					require.False(t, o.duplicate, o.id)
					require.True(t, o.visible, o.id)
				}
			}
			require.EqualValues(t, 3, runs.Load(), "a, b and e ran; the rejected and the duplicate did not")
			require.Equal(t, map[string]int{"a": 1, "b": 1, "d": 1, "e": 1}, effectCounts(t, db))
			require.Equal(t, len(ids)-1, countClaims(t, db))
		})
	}
}
