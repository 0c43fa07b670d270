package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// row is one outbox row as the relay would publish it.
type row struct {
	ID, Dest, Key, Body, Headers string
	Caused                       bool
}

// rowsInOrder returns the rows tx sees, in seq order.
func rowsInOrder(t *testing.T, ctx context.Context, tx pgx.Tx, schema string) []row {
	t.Helper()
	rows, err := tx.Query(ctx, "SELECT message_id, destination, msg_key, convert_from(body, 'UTF8'), headers::text, cause IS NOT NULL FROM "+
		pgx.Identifier{schema, outbox.Table}.Sanitize()+" ORDER BY seq")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	return got
}

// TestSendBatchDerivesTheIDsOfSends: a SendBatch writes the rows, IDs and
// order the same sequence of Sends writes, with causes interleaved, one
// cause that already has a row in the transaction, one taken from ctx and
// one message with its own ID; a rolled-back SendBatch leaves nothing.
// Catches: numbering a cause from 0 within the batch (ignoring its rows),
// or off by one, or by position in the batch rather than per cause.
func TestSendBatchDerivesTheIDsOfSends(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	ctx := consumer.WithName(context.Background(), "ledger")
	a, b, c := &consumer.Message{ID: "a"}, &consumer.Message{ID: "b"}, &consumer.Message{ID: "c"}
	ctxC := outbox.WithCause(ctx, c) // the batch's default cause
	out := func(dest, key, body string, cause *consumer.Message) outbox.Outgoing {
		return outbox.Outgoing{Destination: dest, Message: &consumer.Message{Key: key, Body: []byte(body)}, Cause: cause}
	}
	sends := []outbox.Outgoing{
		out("events", "k1", "a1", a),
		out("events", "k2", "b0", b),
		out("other", "k1", "a2", a),
		{Destination: "events", Message: &consumer.Message{ID: "own", Key: "k2", Body: []byte("own"), Headers: map[string]string{"h": "v"}}, Cause: a},
		out("events", "", "c0", nil),
		out("events", "k2", "b1", b),
		out("events", "k1", "a3", a),
		out("events", "k3", "c1", nil),
	}
	// Both runs start with one row caused by a, sent by Send.
	pre := func(tx pgx.Tx) {
		require.NoError(t, s.Send(outbox.WithCause(ctx, a), tx, "events", &consumer.Message{Key: "k1", Body: []byte("a0")}))
	}

	run := func(send func(tx pgx.Tx) error) []row {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, tx.Rollback(ctx)) }()
		pre(tx)
		require.NoError(t, send(tx))
		return rowsInOrder(t, ctx, tx, db.Schema)
	}
	want := run(func(tx pgx.Tx) error {
		for _, o := range sends {
			cctx := ctxC
			if o.Cause != nil {
				cctx = outbox.WithCause(ctx, o.Cause)
			}
			if err := s.Send(cctx, tx, o.Destination, o.Message); err != nil {
				return err
			}
		}
		return nil
	})
	got := run(func(tx pgx.Tx) error { return s.SendBatch(ctxC, tx, sends) })
	require.Equal(t, want, got)
	require.Empty(t, rowIDs(t, db), "rolled back")

	ids := make([]string, len(got))
	for i, r := range got {
		ids[i] = r.ID
	}
	d := outbox.DeriveID
	require.Equal(t, []string{
		d("ledger", "a", 0), d("ledger", "a", 1), d("ledger", "b", 0), d("ledger", "a", 2), "own",
		d("ledger", "c", 0), d("ledger", "b", 1), d("ledger", "a", 3), d("ledger", "c", 1),
	}, ids)
	require.Equal(t, `{"h": "v"}`, got[4].Headers)
	require.False(t, got[4].Caused, "a message with its own ID has no cause")

	// A second SendBatch in the transaction numbers on.
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := s.SendBatch(ctx, tx, sends[:1]); err != nil {
			return err
		}
		return s.SendBatch(ctx, tx, sends[:1])
	}))
	require.Equal(t, sorted(d("ledger", "a", 0), d("ledger", "a", 1)), rowIDs(t, db))
}

// TestSendBatchRefusesBeforeWriting: every invalid message is reported,
// matched by errors.Is, and nothing is written; an empty batch writes
// nothing.
func TestSendBatchRefusesBeforeWriting(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	ctx := consumer.WithName(context.Background(), "ledger")
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		require.NoError(t, s.SendBatch(ctx, tx, nil))
		require.NoError(t, s.SendBatch(ctx, tx, []outbox.Outgoing{}))
		err := s.SendBatch(ctx, tx, []outbox.Outgoing{
			{Destination: "ok", Message: msg("fine", "k", "x")},
			{Destination: "", Message: msg("x", "k", "x")},
			{Destination: "ok", Message: &consumer.Message{Key: "k"}}, // no ID, no cause
			{Destination: "ok"},
		})
		require.ErrorIs(t, err, outbox.ErrNoDestination)
		require.ErrorIs(t, err, outbox.ErrNoID)
		require.ErrorContains(t, err, "message 1: ")
		require.ErrorContains(t, err, "message 2: ")
		require.ErrorContains(t, err, "message 3: nil message")
		return nil
	}))
	require.Empty(t, rowIDs(t, db))
}

// lockOrder returns two keys of dest whose advisory locks are numbered
// lo < hi.
func lockOrder(t *testing.T, db *pgtest.DB, dest string) (lo, hi string) {
	t.Helper()
	var l1, l2 int64
	for _, k := range []struct {
		key string
		n   *int64
	}{{"x", &l1}, {"y", &l2}} {
		require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT hashtextextended($1, 0)",
			outbox.SendLockKey(db.Schema, dest, k.key)).Scan(k.n))
	}
	if l1 < l2 {
		return "x", "y"
	}
	return "y", "x"
}

// TestSendBatchLocksInOrder: a SendBatch listing its keys high-lock first
// still takes them low first, so it holds nothing while it waits for a
// transaction holding the low lock, which can then take the high lock:
// no deadlock. Catches: locks taken in the batch's order (Postgres then
// breaks a deadlock, failing one transaction).
func TestSendBatchLocksInOrder(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	ctx := context.Background()
	lo, hi := lockOrder(t, db, "orders")

	txY, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txY.Rollback(ctx) }()
	require.NoError(t, s.Send(ctx, txY, "orders", msg("y-lo", lo, "1")))

	txA, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txA.Rollback(ctx) }()
	sent := make(chan error, 1)
	go func() {
		sent <- s.SendBatch(ctx, txA, []outbox.Outgoing{
			{Destination: "orders", Message: msg("a-hi", hi, "1")},
			{Destination: "orders", Message: msg("a-lo", lo, "2")},
		})
	}()
	waitAdvisoryWait(t, db, txA.Conn().PgConn().PID())

	require.NoError(t, s.Send(ctx, txY, "orders", msg("y-hi", hi, "2")), "deadlock: SendBatch took the high lock first")
	require.NoError(t, txY.Commit(ctx))
	require.NoError(t, <-sent)
	require.NoError(t, txA.Commit(ctx))
	require.Equal(t, sorted("y-lo", "y-hi", "a-hi", "a-lo"), rowIDs(t, db))
}

// TestSendBatchPerKeyCommitOrder: producers commit batches of three keys
// each, listed in varying orders so that batches overlap in opposite
// orders, while a relay publishes. After its SendBatch a transaction holds
// its keys' locks, so numbering each key from a counter row then (written
// into the row's body) gives the key's commit order; each key's messages
// come out in that order, none missing, and no transaction deadlocked.
// Catches: no locks (rows numbered out of commit order), unsorted locks
// (deadlock errors).
func TestSendBatchPerKeyCommitOrder(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{MaxConns: 12})
	br := memBroker(t)
	startRelay(t, newRelay(t, db, br, outbox.Config{BatchSize: 16, Workers: 3}))
	ctx := context.Background()
	s := sender(t, db)
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	const producers, keys, perProducer, perBatch = 4, 5, 25, 3
	createCounters(t, db, keys)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				var batch []outbox.Outgoing
				for j := range perBatch {
					// Odd producers list keys descending.
					k := (p + i + j) % keys
					if p%2 == 1 {
						k = (p + i + perBatch - 1 - j) % keys
					}
					key := "key" + strconv.Itoa(k)
					batch = append(batch, outbox.Outgoing{Destination: "orders", Message: msg(fmt.Sprintf("p%d-%d-%s", p, i, key), key, "?")})
				}
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					if err := s.SendBatch(ctx, tx, batch); err != nil {
						return err
					}
					for _, o := range batch {
						var n int
						if err := tx.QueryRow(ctx, "UPDATE counters SET n = n + 1 WHERE k = $1 RETURNING n", o.Message.Key).Scan(&n); err != nil {
							return err
						}
						if _, err := tx.Exec(ctx, "UPDATE "+table+" SET body = $1 WHERE message_id = $2", []byte(strconv.Itoa(n)), o.Message.ID); err != nil {
							return err
						}
					}
					return nil
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
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "40P01" {
			t.Errorf("deadlock: %v", err)
			continue
		}
		require.NoError(t, err)
	}
	if t.Failed() {
		return
	}
	total := producers * perProducer * perBatch
	br.waitDistinct(t, total)
	waitUnpublished(t, db, 0)
	checkKeyOrder(t, br.snapshot(), total)
}
