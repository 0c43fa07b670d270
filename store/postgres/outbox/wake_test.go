package outbox_test

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store/postgres/outbox"
)

// TestShortRoundRunsAgainWhenKeysFree catches a worker whose round came back
// short only because another round owned the keys sleeping a full
// PollInterval instead of looking again once those keys were free. The rows
// share one key; the round that owns it fails (its worker then backs off for
// an hour) only after the other worker's round found the key owned and came
// back empty. PollInterval and the backoff are an hour and LISTEN is off, so
// the rows are published only if the ending round wakes the other worker.
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
	b.setFail(func(string) error {
		if !failed.CompareAndSwap(false, true) {
			return nil
		}
		select {
		case <-empty:
		case <-time.After(30 * time.Second):
			t.Error("the other worker ran no round while the key was owned")
		}
		return errors.New("first publish fails")
	})
	r := newRelay(t, db, b, outbox.Config{
		Workers:      2,
		NoListen:     true,
		PollInterval: time.Hour,
		BackoffMin:   time.Hour,
		BackoffMax:   time.Hour,
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
	b.waitDistinct(t, n)
	waitUnpublished(t, db, 0)
	for i, p := range b.snapshot() {
		if p.msg.ID != msgs[i].ID {
			t.Fatalf("published[%d] = %s, want %s (key order)", i, p.msg.ID, msgs[i].ID)
		}
	}
}
