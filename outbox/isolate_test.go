package outbox_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
)

// TestFailingDestinationDelaysOnlyItself: a destination whose every Publish
// fails (a deleted queue) fills the whole window of the first rounds (20
// rows ahead, rounds of 5); every row of the other destination is published
// while it keeps failing, it is tried again with backoff, and it publishes
// once it heals.
func TestFailingDestinationDelaysOnlyItself(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	gone := errors.New("queue deleted")
	b.setFail(func(dest string) error {
		if dest == "gone" {
			return gone
		}
		return nil
	})
	for i := range 20 {
		sendTx(t, db, s, "gone", msg("g"+strconv.Itoa(i), "g"+strconv.Itoa(i%4), strconv.Itoa(i/4+1)))
	}
	for i := range 10 {
		sendTx(t, db, s, "orders", msg("o"+strconv.Itoa(i), "o"+strconv.Itoa(i%3), strconv.Itoa(i/3+1)))
	}
	reg := prometheus.NewRegistry()
	startRelay(t, newRelay(t, db, b, outbox.Config{Workers: 1, BatchSize: 5, Registerer: reg}))

	b.waitDistinct(t, 10)
	for _, p := range b.snapshot() {
		require.Equal(t, "orders", p.dest)
	}
	checkKeyOrder(t, b.snapshot(), 10)
	waitUnpublished(t, db, 20)
	require.Equal(t, 1.0, gauge(t, reg, outbox.NameFailingDestinations))
	calls := b.callsTo("gone")
	for range 3000 {
		if b.callsTo("gone") > calls {
			break
		}
		waitABit()
	}
	require.Greater(t, b.callsTo("gone"), calls, "the failing destination is tried again")

	b.setFail(nil)
	b.waitDistinct(t, 30)
	waitUnpublished(t, db, 0)
}

// TestRefusedRowDelaysOnlyItsKey: the broker refuses one row ("bad", key a)
// of a destination. The destination's other keys publish; the refused row
// waits with its attempt count and reason, and key a's next rows wait
// behind it. Each time it is due again it is refused again while another
// row passes; after Refused.MaxAttempts it is in outbox_dead with the
// broker's reason, and key a's next rows publish in order. Redrive sends it
// again.
func TestRefusedRowDelaysOnlyItsKey(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	b := memBroker(t)
	s := sender(t, db)
	tooLarge := errors.New("message too large for the broker")
	b.setRefuse(func(_ string, m *consumer.Message) error {
		if m.ID == "bad" {
			return tooLarge
		}
		return nil
	})
	sendTx(t, db, s, "orders", msg("bad", "a", "x"), msg("a2", "a", "x"), msg("b1", "b", "x"))
	sendTx(t, db, s, "orders", msg("a3", "a", "x"), msg("b2", "b", "x"), msg("c1", "", "x"))
	reg := prometheus.NewRegistry()
	const attempts = 3
	startRelay(t, newRelay(t, db, b, outbox.Config{
		Workers:    1,
		Registerer: reg,
		Refused:    retry.Policy{MaxAttempts: attempts, InitialInterval: time.Hour, MaxInterval: time.Hour},
	}))

	b.waitDistinct(t, 3)
	require.ElementsMatch(t, []string{"b1", "b2", "c1"}, ids(b.snapshot()))
	waitAttempts(t, db, "bad", 1)
	require.Equal(t, 3, unpublished(t, db), "bad, a2, a3")

	for i := 2; i <= attempts; i++ {
		// Make the refused row due again, with another row of its
		// destination in the same commit, so that a round sees both.
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE "+pgx.Identifier{db.Schema, outbox.Table}.Sanitize()+" SET retry_at = now() WHERE message_id = 'bad'"); err != nil {
				return err
			}
			return s.Send(ctx, tx, "orders", msg("x"+strconv.Itoa(i), "x", "x"))
		}))
		if i < attempts {
			waitAttempts(t, db, "bad", i)
			require.NotContains(t, ids(b.snapshot()), "a2", "key a waits behind its refused row")
		}
	}
	b.waitDistinct(t, 3+(attempts-1)+2)
	got := ids(b.snapshot())
	require.NotContains(t, got, "bad")
	require.Less(t, indexOf(got, "a2"), indexOf(got, "a3"))
	waitUnpublished(t, db, 0)

	dl, err := outbox.NewDeadLetters(db.Pool, db.Schema)
	require.NoError(t, err)
	dead, err := dl.List(ctx, outbox.DeadFilter{})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, "bad", dead[0].Message.ID)
	require.Equal(t, "a", dead[0].Message.Key)
	require.Equal(t, "orders", dead[0].Destination)
	require.Equal(t, attempts, dead[0].Attempts)
	require.Contains(t, dead[0].Reason, tooLarge.Error())
	require.Equal(t, float64(attempts-1), counter(t, reg, outbox.NameRefused))
	require.Equal(t, 1.0, counter(t, reg, outbox.NameDeadLettered))

	b.setRefuse(nil)
	n, err := dl.Redrive(ctx, outbox.DeadFilter{Destination: "orders"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	b.waitDistinct(t, 3+(attempts-1)+3)
	waitUnpublished(t, db, 0)
	left, err := dl.Count(ctx)
	require.NoError(t, err)
	require.Zero(t, left)
}

// waitAttempts blocks until the outbox row id was refused n times and waits
// with its reason, failing after 30 s.
func waitAttempts(t *testing.T, db *pgtest.DB, id string, n int) {
	t.Helper()
	q := "SELECT attempts, coalesce(retry_at > now(), false), coalesce(last_error, '') FROM " +
		pgx.Identifier{db.Schema, outbox.Table}.Sanitize() + " WHERE message_id = $1"
	var (
		got     int
		waiting bool
		reason  string
	)
	for range 3000 {
		require.NoError(t, db.Pool.QueryRow(context.Background(), q, id).Scan(&got, &waiting, &reason))
		if got == n {
			require.True(t, waiting, "a refused row waits")
			require.NotEmpty(t, reason)
			return
		}
		waitABit()
	}
	t.Fatalf("row %s refused %d times, want %d", id, got, n)
}

func ids(ps []published) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.msg.ID
	}
	return out
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}
