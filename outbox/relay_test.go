package outbox_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

func TestRelayPublishesSentMessages(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	m1 := &consumer.Message{ID: "m1", Key: "k", Body: []byte("one"), Headers: map[string]string{"h": "v"}}
	sendTx(t, db, s, "orders", m1, msg("m2", "k", "two"))
	sendTx(t, db, s, "invoices", msg("m3", "", "three"))

	startRelay(t, newRelay(t, db, b, outbox.Config{}))
	b.waitDistinct(t, 3)
	waitUnpublished(t, db, 0)

	got := b.snapshot()
	require.Len(t, got, 3)
	byID := map[string]published{}
	for _, p := range got {
		byID[p.msg.ID] = p
	}
	require.Equal(t, "orders", byID["m1"].dest)
	require.Equal(t, "k", byID["m1"].msg.Key)
	require.Equal(t, "one", string(byID["m1"].msg.Body))
	require.Equal(t, map[string]string{"h": "v"}, byID["m1"].msg.Headers)
	require.Equal(t, "orders", byID["m2"].dest)
	require.Equal(t, "invoices", byID["m3"].dest)
	require.Equal(t, "three", string(byID["m3"].msg.Body))
	// Per-key order: m1 before m2.
	var order []string
	for _, p := range got {
		if p.msg.Key == "k" {
			order = append(order, p.msg.ID)
		}
	}
	require.Equal(t, []string{"m1", "m2"}, order)
}

func TestRolledBackSendIsNotPublished(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(ctx, tx, "orders", msg("gone", "k", "x")))
	require.NoError(t, tx.Rollback(ctx))
	sendTx(t, db, s, "orders", msg("kept", "k", "y"))

	startRelay(t, newRelay(t, db, b, outbox.Config{}))
	b.waitDistinct(t, 1)
	waitUnpublished(t, db, 0)
	got := b.snapshot()
	require.Len(t, got, 1)
	require.Equal(t, "kept", got[0].msg.ID)
}

// TestNoRowSkippedOnLateCommit: tx A writes the lower-numbered row but
// commits after tx B, which the relay has already published. A is still
// published: the relay selects unpublished rows, it keeps no cursor.
func TestNoRowSkippedOnLateCommit(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	ctx := context.Background()

	txA, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txA.Rollback(ctx) }()
	require.NoError(t, s.Send(ctx, txA, "orders", msg("A", "ka", "a")))
	sendTx(t, db, s, "orders", msg("B", "kb", "b"))

	startRelay(t, newRelay(t, db, b, outbox.Config{}))
	b.waitDistinct(t, 1)
	require.Equal(t, "B", b.snapshot()[0].msg.ID)
	// More later rows, published after B, before A commits.
	sendTx(t, db, s, "orders", msg("C", "kc", "c"))
	b.waitDistinct(t, 2)

	require.NoError(t, txA.Commit(ctx))
	b.waitDistinct(t, 3)
	waitUnpublished(t, db, 0)
	var ids []string
	for _, p := range b.snapshot() {
		ids = append(ids, p.msg.ID)
	}
	require.Equal(t, []string{"B", "C", "A"}, ids)
}

// TestSendSerialisesKey: a second Send of the same key waits for the first
// transaction to end, so the key's rows are numbered in commit order; a
// Send of another key does not wait.
func TestSendSerialisesKey(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	ctx := context.Background()

	txA, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txA.Rollback(ctx) }()
	require.NoError(t, s.Send(ctx, txA, "orders", msg("A", "k", "a")))

	// Another key does not wait for A.
	sendTx(t, db, s, "orders", msg("other", "k2", "o"))

	txB, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txB.Rollback(ctx) }()
	pidB := txB.Conn().PgConn().PID()
	sent := make(chan error, 1)
	go func() { sent <- s.Send(ctx, txB, "orders", msg("B", "k", "b")) }()

	// B waits on the key's advisory lock while A is open.
	waitAdvisoryWait(t, db, pidB)
	require.NoError(t, txA.Commit(ctx))
	require.NoError(t, <-sent)
	require.NoError(t, txB.Commit(ctx))

	startRelay(t, newRelay(t, db, b, outbox.Config{}))
	b.waitDistinct(t, 3)
	var order []string
	for _, p := range b.snapshot() {
		if p.msg.Key == "k" {
			order = append(order, p.msg.ID)
		}
	}
	require.Equal(t, []string{"A", "B"}, order)
}

func waitAdvisoryWait(t *testing.T, db *pgtest.DB, pid uint32) {
	t.Helper()
	for range 3000 {
		var waiting bool
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted)", int32(pid)).Scan(&waiting))
		if waiting {
			return
		}
		waitABit()
	}
	t.Fatal("the second Send never waited on the key's lock")
}

// TestPerKeyCommitOrderConcurrent: producers commit per-key sequence
// numbers concurrently (a counter row per key serialises them, so the
// number is the key's commit order) while one relay publishes; each key's
// messages come out in commit order and none is missing.
func TestPerKeyCommitOrderConcurrent(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{MaxConns: 12})
	b := memBroker(t)
	startRelay(t, newRelay(t, db, b, outbox.Config{BatchSize: 16, Workers: 3}))
	total := produceOrdered(t, db, 4, 5, 30)
	b.waitDistinct(t, total)
	waitUnpublished(t, db, 0)
	checkKeyOrder(t, b.snapshot(), total)
}

// TestMultipleRelays: three relays publish the same outbox at once; every
// message is published, each key in commit order.
func TestMultipleRelays(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{MaxConns: 16})
	b := memBroker(t)
	for range 3 {
		startRelay(t, newRelay(t, db, b, outbox.Config{BatchSize: 7, Workers: 2}))
	}
	total := produceOrdered(t, db, 4, 6, 30)
	b.waitDistinct(t, total)
	waitUnpublished(t, db, 0)
	checkKeyOrder(t, b.snapshot(), total)
}

// produceOrdered runs producers goroutines, each committing perProducer
// transactions; transaction i of producer p sends to key (p+i) % keys a
// body holding the key's next sequence number from a counter row updated
// in the same transaction. It returns how many messages it sent.
func produceOrdered(t *testing.T, db *pgtest.DB, producers, keys, perProducer int) int {
	t.Helper()
	ctx := context.Background()
	s := sender(t, db)
	createCounters(t, db, keys)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				key := "key" + strconv.Itoa((p+i)%keys)
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					var n int
					if err := tx.QueryRow(ctx, "UPDATE counters SET n = n + 1 WHERE k = $1 RETURNING n", key).Scan(&n); err != nil {
						return err
					}
					return s.Send(ctx, tx, "orders", msg(fmt.Sprintf("%s-%d", key, n), key, strconv.Itoa(n)))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return producers * perProducer
}

// checkKeyOrder asserts that each key's first copies are numbered 1, 2, 3,
// … in publish order and that total distinct messages arrived.
func checkKeyOrder(t *testing.T, got []published, total int) {
	t.Helper()
	seen := map[string]bool{}
	next := map[string]int{}
	dups := 0
	for _, p := range got {
		if seen[p.msg.ID] {
			dups++
			continue
		}
		seen[p.msg.ID] = true
		n, err := strconv.Atoi(string(p.msg.Body))
		require.NoError(t, err)
		require.Equal(t, next[p.msg.Key]+1, n, "key %s: message %s out of commit order", p.msg.Key, p.msg.ID)
		next[p.msg.Key] = n
	}
	require.Len(t, seen, total)
	t.Logf("%d messages, %d re-published copies", total, dups)
}

// createCounters makes the table counters with a zero row per key "key<i>":
// a producer's UPDATE of its key's row serialises the key's transactions, so
// the number it returns is the key's commit order.
func createCounters(t *testing.T, db *pgtest.DB, keys int) {
	t.Helper()
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, "CREATE TABLE counters (k text PRIMARY KEY, n int NOT NULL)")
	require.NoError(t, err)
	for k := range keys {
		_, err := db.Pool.Exec(ctx, "INSERT INTO counters VALUES ($1, 0)", "key"+strconv.Itoa(k))
		require.NoError(t, err)
	}
}
