package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

type outcome struct {
	id        string
	duplicate bool
	err       error
	visible   bool // the effect was visible to another session when Process returned
}

// runBatch calls Process for ids concurrently and returns each outcome. The
// store's BatchLinger is long, so the calls form one batch of len(ids) when
// BatchSize == len(ids).
func runBatch(t *testing.T, db *pgtest.DB, s *pgstore.Store, ids []string, fn func(id string) func(context.Context) error) []outcome {
	t.Helper()
	ctx := ctxT(t)
	out := make([]outcome, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			dup, err := s.Process(ctx, "ledger", id, fn(id))
			var n int
			_ = db.Pool.QueryRow(ctx, "SELECT count(*) FROM effects WHERE id = $1", id).Scan(&n)
			out[i] = outcome{id: id, duplicate: dup, err: err, visible: n > 0}
		})
	}
	wg.Wait()
	return out
}

func batchStore(t *testing.T, db *pgtest.DB, size int) *pgstore.Store {
	return newStore(t, db, pgstore.Config{BatchSize: size, BatchLinger: 10 * time.Second})
}

func TestBatchFailureRollsBackOnlyItsSavepoint(t *testing.T) {
	const size = 5
	for name, failAt := range map[string]int{"first": 1, "middle": 3, "last": size} {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			s := batchStore(t, db, size)
			ids := []string{"a", "b", "c", "d", "e"}
			var seq atomic.Int32
			failed := make(chan string, 1)
			res := runBatch(t, db, s, ids, func(id string) func(context.Context) error {
				return func(ctx context.Context) error {
					// Position in the batch = order the handlers run in.
					if int(seq.Add(1)) == failAt {
						failed <- id
						_ = effect(id)(ctx) // written, then rolled back to the savepoint
						return errBoom
					}
					return effect(id)(ctx)
				}
			})
			bad := <-failed
			require.EqualValues(t, size, seq.Load())
			for _, r := range res {
				if r.id == bad {
					require.Same(t, errBoom, r.err, "the failing message gets its own error, alone")
					require.False(t, claimed(t, db, "ledger", r.id))
					require.Equal(t, 0, countEffects(t, db, r.id))
					continue
				}
				require.NoError(t, r.err, r.id)
				require.False(t, r.duplicate)
				require.True(t, r.visible, "%s: Process returned before its batch committed", r.id)
				require.True(t, claimed(t, db, "ledger", r.id))
				require.Equal(t, 1, countEffects(t, db, r.id))
			}
			// The others committed together, in one transaction.
			var txids int
			require.NoError(t, db.Pool.QueryRow(ctxT(t), "SELECT count(DISTINCT txid) FROM effects").Scan(&txids))
			require.Equal(t, 1, txids)
		})
	}
}

func TestBatchDuplicateInsideOneBatch(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 4)
	var calls atomic.Int32
	res := runBatch(t, db, s, []string{"x", "y", "x", "z"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error { calls.Add(1); return effect(id)(ctx) }
	})
	require.EqualValues(t, 3, calls.Load())
	dups := 0
	for _, r := range res {
		require.NoError(t, r.err)
		require.True(t, r.visible)
		if r.duplicate {
			dups++
			require.Equal(t, "x", r.id)
		}
	}
	require.Equal(t, 1, dups)
	require.Equal(t, map[string]int{"x": 1, "y": 1, "z": 1}, effectCounts(t, db))

	// Across batches as well.
	res = runBatch(t, db, s, []string{"x", "y", "z", "w"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error { calls.Add(1); return effect(id)(ctx) }
	})
	require.EqualValues(t, 4, calls.Load())
	for _, r := range res {
		require.NoError(t, r.err)
		require.Equal(t, r.id != "w", r.duplicate, r.id)
	}
	require.Equal(t, map[string]int{"x": 1, "y": 1, "z": 1, "w": 1}, effectCounts(t, db))
}

// A batch whose connection dies before COMMIT: when the database is down,
// every caller fails with an error naming the store, whose probe fails (an
// outage); when the database still answers, the messages run again one by
// one and each commits exactly once.
func TestBatchCommitFailure(t *testing.T) {
	for name, down := range map[string]bool{"database down": true, "database answers": false} {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			p, pool := proxied(t, db, 2)
			s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema, BatchSize: 4, BatchLinger: 10 * time.Second, Logger: quiet})
			closeAtEnd(t, s)
			require.NoError(t, err)
			defer s.Close(context.Background())
			var runs atomic.Int32
			ids := []string{"a", "b", "c", "d"}
			res := runBatch(t, db, s, ids, func(id string) func(context.Context) error {
				return func(ctx context.Context) error {
					if err := effect(id)(ctx); err != nil {
						return err
					}
					if runs.Add(1) == 4 {
						if down {
							p.Refuse()
						}
						p.Cut() // the batch's connection dies before COMMIT
					}
					return nil
				}
			})
			if !down {
				for _, r := range res {
					require.NoError(t, r.err, r.id)
					require.False(t, r.duplicate, r.id)
				}
				require.EqualValues(t, 8, runs.Load(), "each message ran again alone")
				require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, effectCounts(t, db))
				return
			}
			for _, r := range res {
				require.Error(t, r.err, r.id)
				require.Equal(t, consumer.ClassUnavailable, consumer.Classify(r.err), "%s: %v", r.id, r.err)
				require.Error(t, requireProbedDependency(t, s, r.err), "%s: the database is down", r.id)
				require.False(t, r.duplicate)
			}
			require.Empty(t, effectCounts(t, db))

			// The next batch commits on a new connection.
			p.Accept()
			res = runBatch(t, db, s, ids, effect)
			for _, r := range res {
				require.NoError(t, r.err)
			}
			require.Len(t, effectCounts(t, db), 4)
		})
	}
}

func TestBatchPanicIsReportedAlone(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 3)
	res := runBatch(t, db, s, []string{"a", "b", "c"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if id == "b" {
				_ = effect(id)(ctx)
				panic("handler bug")
			}
			return effect(id)(ctx)
		}
	})
	for _, r := range res {
		if r.id == "b" {
			var pe *consumer.PanicError
			require.ErrorAs(t, r.err, &pe)
			require.Equal(t, "handler bug", pe.Value)
			require.NotEmpty(t, pe.Stack)
			continue
		}
		require.NoError(t, r.err)
	}
	require.Equal(t, map[string]int{"a": 1, "c": 1}, effectCounts(t, db))
}

func TestBatchSwallowedErrorAndStoreErrorsStayPerMessage(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 3)
	res := runBatch(t, db, s, []string{"a", "b", "c"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := effect(id)(ctx); err != nil {
				return err
			}
			if id == "b" {
				tx, _ := pgstore.Tx(ctx)
				_, _ = tx.Exec(ctx, "SELECT 1/0") // swallowed: b's savepoint is aborted
			}
			return nil
		}
	})
	for _, r := range res {
		if r.id == "b" {
			require.Error(t, r.err)
			require.Equal(t, consumer.ClassRetryable, consumer.Classify(r.err))
			continue
		}
		require.NoError(t, r.err)
	}
	require.Equal(t, map[string]int{"a": 1, "c": 1}, effectCounts(t, db))
}

func TestBatchCloseDrains(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, BatchSize: 5, BatchLinger: time.Hour})
	closeAtEnd(t, s)
	require.NoError(t, err)

	// Three calls wait in a batch that lingers for an hour; Close runs them.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	var ran atomic.Int32
	for i := range 3 {
		wg.Go(func() {
			_, errs[i] = s.Process(ctxT(t), "ledger", fmt.Sprint("m", i), func(ctx context.Context) error {
				ran.Add(1)
				return effect(fmt.Sprint("m", i))(ctx)
			})
		})
	}
	require.Eventually(t, func() bool { return pgstore.Queued(s) == 3 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close(ctxT(t)))
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, ran.Load())
	require.Len(t, effectCounts(t, db), 3)

	_, err = s.Process(ctxT(t), "ledger", "late", func(context.Context) error { return nil })
	require.ErrorIs(t, err, pgstore.ErrClosed)
	require.Equal(t, consumer.ClassUnavailable, consumer.Classify(err))
}

func TestBatchCallerContextDoneWhileQueued(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 5)
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := s.Process(ctx, "ledger", "m1", effect("m1"))
		done <- err
	}()
	require.Eventually(t, func() bool { return pgstore.Queued(s) == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	// The batch runs when the next four arrive; the cancelled call is answered
	// without running its handler.
	res := runBatch(t, db, s, []string{"a", "b", "c", "d"}, effect)
	for _, r := range res {
		require.NoError(t, r.err)
	}
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, 0, countEffects(t, db, "m1"))
	require.False(t, claimed(t, db, "ledger", "m1"))
}

func TestBatchFailedFirstCopyLetsSecondCopyRun(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 3)
	var xCalls atomic.Int32
	res := runBatch(t, db, s, []string{"x", "y", "x"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if id == "x" && xCalls.Add(1) == 1 {
				_ = effect(id)(ctx)
				return errBoom // the first copy fails and drops its claim…
			}
			return effect(id)(ctx) // …so the second copy runs instead of being a duplicate
		}
	})
	require.EqualValues(t, 2, xCalls.Load())
	var xs []outcome
	for _, r := range res {
		if r.id == "x" {
			xs = append(xs, r)
			continue
		}
		require.NoError(t, r.err)
	}
	require.Len(t, xs, 2)
	require.ElementsMatch(t, []error{errBoom, nil}, []error{xs[0].err, xs[1].err})
	require.False(t, xs[0].duplicate || xs[1].duplicate)
	require.Equal(t, map[string]int{"x": 1, "y": 1}, effectCounts(t, db))
	require.True(t, claimed(t, db, "ledger", "x"))
}

// TestBatchSavepointCoversEveryStatementKind: whatever the failing handler's
// first statement is (piggybacked Exec, Exec without arguments, QueryRow,
// Query, SendBatch, a statement on Conn() directly, none at all), a rollback
// to its savepoint undoes exactly its work and drops its claim.
func TestBatchSavepointCoversEveryStatementKind(t *testing.T) {
	for name, first := range map[string]func(ctx context.Context, id string) error{
		"exec-args": func(ctx context.Context, id string) error { return effect(id)(ctx) },
		"exec-no-args": func(ctx context.Context, id string) error {
			tx, _ := pgstore.Tx(ctx)
			_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ('"+id+"')")
			return err
		},
		"query-row": func(ctx context.Context, id string) error {
			tx, _ := pgstore.Tx(ctx)
			var got string
			return tx.QueryRow(ctx, "INSERT INTO effects (id) VALUES ($1) RETURNING id", id).Scan(&got)
		},
		"query": func(ctx context.Context, id string) error {
			tx, _ := pgstore.Tx(ctx)
			rows, err := tx.Query(ctx, "INSERT INTO effects (id) VALUES ($1) RETURNING id", id)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		},
		"send-batch": func(ctx context.Context, id string) error {
			tx, _ := pgstore.Tx(ctx)
			var b pgx.Batch
			b.Queue("INSERT INTO effects (id) VALUES ($1)", id)
			return tx.SendBatch(ctx, &b).Close()
		},
		"conn": func(ctx context.Context, id string) error {
			tx, _ := pgstore.Tx(ctx)
			_, err := tx.Conn().Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", id)
			return err
		},
		"none": func(context.Context, string) error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			createEffects(t, db)
			s := batchStore(t, db, 3)
			res := runBatch(t, db, s, []string{"a", "b", "c"}, func(id string) func(context.Context) error {
				return func(ctx context.Context) error {
					if id != "b" {
						return effect(id)(ctx)
					}
					if err := first(ctx, id); err != nil {
						return err
					}
					return errBoom
				}
			})
			for _, r := range res {
				if r.id == "b" {
					require.Same(t, errBoom, r.err)
					continue
				}
				require.NoError(t, r.err)
			}
			require.Equal(t, map[string]int{"a": 1, "c": 1}, effectCounts(t, db))
			require.False(t, claimed(t, db, "ledger", "b"))

			// Succeeding this way commits.
			res = runBatch(t, db, s, []string{"b", "d", "e"}, func(id string) func(context.Context) error {
				return func(ctx context.Context) error {
					if id == "b" {
						if err := first(ctx, id); err != nil {
							return err
						}
						return effect(id + "2")(ctx)
					}
					return effect(id)(ctx)
				}
			})
			for _, r := range res {
				require.NoError(t, r.err)
			}
			counts := effectCounts(t, db)
			require.Equal(t, 1, counts["b2"])
			require.True(t, claimed(t, db, "ledger", "b"))
		})
	}
}

// TestBatchCallerGoneBeforeItsTurn: callers whose context ends while an
// earlier message of their batch runs are answered without running their
// handlers and lose their claims; the earlier message's work still commits.
func TestBatchCallerGoneBeforeItsTurn(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := batchStore(t, db, 3)
	ids := []string{"a", "b", "c"}
	cancels := map[string]context.CancelFunc{}
	ctxs := map[string]context.Context{}
	for _, id := range ids {
		ctxs[id], cancels[id] = context.WithCancel(ctxT(t))
	}
	var first atomic.Value
	res := make(map[string]outcome)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			dup, err := s.Process(ctxs[id], "ledger", id, func(ctx context.Context) error {
				if first.CompareAndSwap(nil, id) {
					for other, cancel := range cancels {
						if other != id {
							cancel()
						}
					}
				}
				return effect(id)(ctx)
			})
			mu.Lock()
			res[id] = outcome{id: id, duplicate: dup, err: err}
			mu.Unlock()
		})
	}
	wg.Wait()
	winner := first.Load().(string)
	for id, r := range res {
		if id == winner {
			require.NoError(t, r.err)
			continue
		}
		require.ErrorIs(t, r.err, context.Canceled, id)
		require.False(t, claimed(t, db, "ledger", id))
	}
	require.Equal(t, map[string]int{winner: 1}, effectCounts(t, db), "the first message's work survives")
	require.True(t, claimed(t, db, "ledger", winner))
}

// TestBatchMixedLoad drives many copies of many messages through batch mode
// from concurrent callers, with handlers that fail, panic, swallow errors or
// do nothing on their first attempts, and retries every failure until
// success: in the end each message's effect exists exactly once.
func TestBatchMixedLoad(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{BatchSize: 16, BatchLinger: time.Millisecond})
	const messages, copies, callers = 120, 3, 40
	var attempts sync.Map // id → *atomic.Int32
	fn := func(id string) func(context.Context) error {
		a, _ := attempts.LoadOrStore(id, new(atomic.Int32))
		n := a.(*atomic.Int32).Add(1)
		return func(ctx context.Context) error {
			kind, _ := strconv.Atoi(id[1:])
			if n <= 2 { // the first two attempts misbehave, each in its own way
				switch kind % 5 {
				case 1:
					_ = effect(id)(ctx)
					return errBoom
				case 2:
					_ = effect(id)(ctx)
					panic("boom")
				case 3:
					_ = effect(id)(ctx)
					tx, _ := pgstore.Tx(ctx)
					_, _ = tx.Exec(ctx, "SELECT 1/0")
					return nil
				case 4:
					return errBoom
				}
			}
			return effect(id)(ctx)
		}
	}
	work := make(chan string, messages*copies)
	for range copies {
		for m := range messages {
			work <- fmt.Sprintf("m%d", m)
		}
	}
	close(work)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range callers {
		wg.Go(func() {
			for id := range work {
				for try := 0; ; try++ {
					require.Less(t, try, 10, "%s never succeeded", id)
					_, err := s.Process(ctx, "ledger", id, fn(id))
					if err == nil {
						break
					}
					require.NotEqual(t, consumer.ClassUnavailable, consumer.Classify(err), "%s: %v", id, err)
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Positive(t, failures.Load())
	counts := effectCounts(t, db)
	require.Len(t, counts, messages)
	for id, n := range counts {
		require.Equal(t, 1, n, id)
	}
	require.Equal(t, messages, countClaims(t, db))
}

// A deferred constraint that one message violates fails the batch's COMMIT.
// The store then runs the batch's messages one by one: the offender fails with
// a retryable (not Unavailable) error and the others commit exactly once.
func TestBatchRejectedCommitIsolatesTheOffender(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	ctx := ctxT(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE parents (id text PRIMARY KEY);
		CREATE TABLE children (parent text REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)`)
	require.NoError(t, err)
	s := batchStore(t, db, 3)
	out := runBatch(t, db, s, []string{"good-1", "bad", "good-2"}, func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := effect(id)(ctx); err != nil {
				return err
			}
			if id != "bad" {
				return nil
			}
			tx, _ := pgstore.Tx(ctx)
			_, err := tx.Exec(ctx, `INSERT INTO children (parent) VALUES ('missing')`)
			return err
		}
	})
	for _, o := range out {
		if o.id == "bad" {
			require.Error(t, o.err)
			require.Equal(t, consumer.ClassRetryable, consumer.Classify(o.err), "a rejected commit is the message's fault, not an outage: %v", o.err)
			continue
		}
		require.NoError(t, o.err, o.id)
		require.False(t, o.duplicate, o.id)
	}
	var goods, bads int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE id LIKE 'good-%'), count(*) FILTER (WHERE id = 'bad') FROM effects`).Scan(&goods, &bads))
	require.Equal(t, 2, goods)
	require.Equal(t, 0, bads)
	dup, err := s.Process(ctx, "ledger", "good-1", effect("good-1"))
	require.NoError(t, err)
	require.True(t, dup, "good-1 was committed once; a redelivery is a duplicate")
}
