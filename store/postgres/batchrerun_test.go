package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// A batch whose COMMIT the server rejects while the next batch waits for one
// of its row locks: the next batch gets the lock when the rejected
// transaction ends, and the rejected batch's messages, run again one by one,
// need that lock in turn. They must not wait for it where the next batch's
// COMMIT waits for them (a deadlock the server cannot see): every Process
// call returns, and every effect commits exactly once.
func TestBatchRejectedCommitDoesNotBlockTheNextBatch(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	// The tripwire's deferred trigger runs in the first batch's COMMIT: it
	// waits until another session of this test waits for a lock (the second
	// batch, on the contended row), then rejects the COMMIT.
	_, err := db.Pool.Exec(ctx, `
		CREATE TABLE contended_row (id text PRIMARY KEY, n int NOT NULL);
		INSERT INTO contended_row VALUES ('x', 0);
		CREATE TABLE tripwire (id text);
		CREATE FUNCTION trip() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			FOR i IN 1..1000 LOOP
				EXIT WHEN EXISTS (SELECT FROM pg_catalog.pg_stat_activity
					WHERE application_name = current_setting('application_name')
					AND pid <> pg_backend_pid() AND wait_event_type = 'Lock');
				PERFORM pg_sleep(0.01);
			END LOOP;
			RAISE EXCEPTION 'tripwire';
		END $$;
		CREATE CONSTRAINT TRIGGER trip AFTER INSERT ON tripwire
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trip();`)
	require.NoError(t, err)
	s := batchStore(t, db, 2)

	runs := map[string]*atomic.Int32{}
	for _, id := range []string{"a1", "a2", "b1", "b2"} {
		runs[id] = new(atomic.Int32)
	}
	firstRan := make(chan struct{}, 2)
	handler := func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			run := runs[id].Add(1)
			if err := effect(id)(ctx); err != nil {
				return err
			}
			tx, _ := pgstore.Tx(ctx)
			if id == "a1" || id == "b1" {
				if _, err := tx.Exec(ctx, "UPDATE contended_row SET n = n + 1 WHERE id = $1", "x"); err != nil {
					return err
				}
			}
			if id == "a1" && run == 1 {
				if _, err := tx.Exec(ctx, "INSERT INTO tripwire VALUES ($1)", id); err != nil {
					return err
				}
			}
			if id[0] == 'a' && run == 1 {
				firstRan <- struct{}{}
			}
			return nil
		}
	}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	process := func(id string) {
		wg.Go(func() {
			_, err := s.Process(ctx, "ledger", id, handler(id))
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		})
	}
	process("a1")
	process("a2")
	<-firstRan
	<-firstRan // the first batch's handlers ran; it commits while the second forms
	process("b1")
	process("b2")
	wg.Wait()

	require.Equal(t, map[string]error{"a1": nil, "a2": nil, "b1": nil, "b2": nil}, errs)
	require.EqualValues(t, 2, runs["a1"].Load(), "a1 ran in its batch, then alone")
	require.EqualValues(t, 1, runs["b1"].Load())
	require.Equal(t, map[string]int{"a1": 1, "a2": 1, "b1": 1, "b2": 1}, effectCounts(t, db))
	var n int
	require.NoError(t, db.Pool.QueryRow(ctxT(t), "SELECT n FROM contended_row").Scan(&n))
	require.Equal(t, 2, n)
	require.Equal(t, 4, countClaims(t, db))
}
