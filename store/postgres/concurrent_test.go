package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// TestConcurrentDuplicatesRunOnce starts n concurrent Process calls of one
// message. The first claim holds the primary key until its transaction ends;
// the handler waits until the other sessions are blocked on it, so the test
// exercises the waiting path, not just sequential duplicates.
func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const maxConns = 10 // the server is shared: callers beyond this wait for a connection
			db := pgtest.New(t, pgtest.Options{MaxConns: maxConns})
			createEffects(t, db)
			s := newStore(t, db, pgstore.Config{})
			ctx := ctxT(t)
			// The watcher's own connection must not be among the store's.
			watch := db.NewPool(t, nil)
			wantBlocked := min(n, maxConns) - 1

			var calls, maxBlocked atomic.Int32
			var dups atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Go(func() {
					dup, err := s.Process(ctx, "ledger", "same", func(ctx context.Context) error {
						calls.Add(1)
						// Wait (bounded) until the others block on our claim.
						deadline := time.Now().Add(10 * time.Second)
						for time.Now().Before(deadline) {
							var blocked int
							//oncely:allow txescape the test watches the blocked claims from another connection
							if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
								WHERE application_name = $1 AND wait_event_type = 'Lock'`, db.Schema).Scan(&blocked); err != nil {
								return err
							}
							maxBlocked.Store(int32(blocked))
							if blocked >= wantBlocked {
								break
							}
							time.Sleep(5 * time.Millisecond)
						}
						return effect("same")(ctx)
					})
					if dup {
						dups.Add(1)
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.EqualValues(t, wantBlocked, maxBlocked.Load(), "the other sessions waited on the claim")
			require.EqualValues(t, 1, calls.Load(), "the handler ran once")
			require.EqualValues(t, n-1, dups.Load())
			require.Equal(t, 1, countEffects(t, db, "same"))
		})
	}
}

// TestConcurrentDuplicatesRunOnceBatchMode: in batch mode copies of one
// message land in the same batch (a duplicate of the copy that ran) or in a
// later one (whose claim waits for the earlier batch's COMMIT).
func TestConcurrentDuplicatesRunOnceBatchMode(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			s := newStore(t, db, pgstore.Config{BatchSize: 5, BatchLinger: time.Millisecond})
			ctx := ctxT(t)
			var calls, dups atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, 2*n)
			for i := range 2 * n { // n copies of "same" mixed with n other messages
				id := "same"
				if i%2 == 1 {
					id = fmt.Sprint("other", i)
				}
				wg.Go(func() {
					dup, err := s.Process(ctx, "ledger", id, func(ctx context.Context) error {
						if id == "same" {
							calls.Add(1)
						}
						return effect(id)(ctx)
					})
					if dup {
						dups.Add(1)
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.EqualValues(t, 1, calls.Load())
			require.EqualValues(t, n-1, dups.Load())
			counts := effectCounts(t, db)
			require.Len(t, counts, n+1)
			for id, c := range counts {
				require.Equal(t, 1, c, id)
			}
		})
	}
}
