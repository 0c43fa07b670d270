package outbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store/postgres/outbox"
)

// TestKeyReleasedMidScanKeepsOrder: a relay round's ordered scan skips key
// k's first row because another round owns k, and that owner commits before
// the scan reaches k's second row, which is then free. The round must not
// publish k's second row ahead of its first. The bug it catches: a skip
// decided row by row (a key taken again once released mid-scan), which
// published k-2 before k-1.
//
// The scan is stopped between the two rows on the row lock of a message of
// another key that the test holds FOR UPDATE; the test owns k meanwhile with
// the relay's own advisory lock.
func TestKeyReleasedMidScanKeepsOrder(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, pgtest.Options{MaxConns: 8})
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	// Enough published rows that the claim scans the unpublished index in
	// seq order, evaluating rows one at a time, as on a real outbox.
	_, err := db.Pool.Exec(ctx, "INSERT INTO "+table+" (message_id, destination, body, published_at) SELECT 'old-' || i, 'd', '', now() FROM generate_series(1, 20000) i")
	require.NoError(t, err)
	s := sender(t, db)
	sendTx(t, db, s, "d", msg("k-1", "k", "1"))
	sendTx(t, db, s, "d", msg("x-1", "x", "1"))
	sendTx(t, db, s, "d", msg("k-2", "k", "2"))
	_, err = db.Pool.Exec(ctx, "ANALYZE "+table)
	require.NoError(t, err)

	owner, err := db.Pool.Begin(ctx) // another round owning k
	require.NoError(t, err)
	defer func() { _ = owner.Rollback(ctx) }()
	_, err = owner.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "oncely.outbox.relay\n"+db.Schema+"\nd\n=k")
	require.NoError(t, err)
	stop, err := db.Pool.Begin(ctx) // holds x-1's row: the scan waits there
	require.NoError(t, err)
	defer func() { _ = stop.Rollback(ctx) }()
	_, err = stop.Exec(ctx, "SELECT 1 FROM "+table+" WHERE message_id = 'x-1' FOR UPDATE")
	require.NoError(t, err)

	b := memBroker(t)
	startRelay(t, newRelay(t, db, b, outbox.Config{Workers: 1}))
	waitScanBlocked(t, db)
	require.NoError(t, owner.Commit(ctx)) // k is free before the scan reaches k-2
	require.NoError(t, stop.Rollback(ctx))

	b.waitDistinct(t, 3)
	var order []string
	for _, p := range b.snapshot() {
		if p.msg.Key == "k" {
			order = append(order, p.msg.ID)
		}
	}
	require.Equal(t, []string{"k-1", "k-2"}, order[:2], "key k published out of order")
}

// waitScanBlocked waits until a relay claim in db's schema waits on a row
// lock.
func waitScanBlocked(t *testing.T, db *pgtest.DB) {
	t.Helper()
	for range 3000 {
		var blocked bool
		require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT EXISTS (
			SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE NOT l.granted AND l.locktype IN ('transactionid', 'tuple')
			  AND a.query LIKE '%pg_try_advisory_xact_lock%' AND a.query LIKE $1)`,
			fmt.Sprintf("%%%s%%", db.Schema)).Scan(&blocked))
		if blocked {
			return
		}
		waitABit()
	}
	t.Fatal("the relay's claim never waited on the held row")
}
