package outbox_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// TestShortRoundRunsAgainWhenKeysFree catches a worker whose round came back
// short only because another round owned the keys sleeping a full
// PollInterval instead of looking again once those keys were free. The rows
// share one key; the round that owns it fails on the database (its
// connection is killed after the publish, so its worker then backs off for
// an hour) only after the other worker's round found the key owned and came
// back empty. PollInterval and the backoff are an hour and LISTEN is off, so
// the rows are marked only if the failing round wakes the other worker.
func TestShortRoundRunsAgainWhenKeysFree(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	const n = 10
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg("m"+strconv.Itoa(i), "k", "x")
	}
	sendTx(t, db, s, "orders", msgs...)

	empty := make(chan struct{}, 1)
	var failed atomic.Bool
	r := newRelay(t, db, b, outbox.Config{
		Workers:      2,
		NoListen:     true,
		PollInterval: time.Hour,
		BackoffMin:   time.Hour,
		BackoffMax:   time.Hour,
	})
	r.SetAfterPublish(func(ctx context.Context, pid uint32) {
		if !failed.CompareAndSwap(false, true) {
			return
		}
		select {
		case <-empty:
		case <-time.After(30 * time.Second):
			t.Error("the other worker ran no round while the key was owned")
		}
		_, err := db.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid))
		require.NoError(t, err)
		// The client may hear of the termination before the backend has
		// released its locks: wait until the key's lock is free, so that
		// the woken worker finds it so.
		for range 3000 {
			var held int
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE pid = $1 AND locktype = 'advisory'", int32(pid)).Scan(&held))
			if held == 0 {
				return
			}
			waitABit()
		}
		t.Error("the terminated round still holds its locks")
	})
	r.SetRoundEnded(func(n int, err error) {
		if n == 0 && err == nil {
			select {
			case empty <- struct{}{}:
			default:
			}
		}
	})
	startRelay(t, r)
	waitUnpublished(t, db, 0)
	got := b.snapshot()
	require.Len(t, got, 2*n, "published by the failed round, then again by the woken worker")
	for i, p := range got[n:] {
		if p.msg.ID != msgs[i].ID {
			t.Fatalf("published[%d] = %s, want %s (key order)", n+i, p.msg.ID, msgs[i].ID)
		}
	}
}
