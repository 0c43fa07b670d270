package outbox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// TestKeyReleasedMidClaimKeepsOrder: another round owns key k while a relay
// round reads its window (k-1, x-1, k-2), and that owner publishes k-1,
// marks it and commits after the window was read and before the round takes
// its locks. The round must then publish k-2 once and never k-1 again. The
// bug it catches: rows read in a snapshot taken before the locks (the
// window's, or one statement that reads and locks together), which
// published k-1 a second time, after k-2's owner moved on.
//
// It also checks the other half of the claim: while k is owned, the round
// publishes x-1 and nothing of k (a round reading the rows of a key it
// failed to lock publishes k-1 ahead of its owner).
func TestKeyReleasedMidClaimKeepsOrder(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, pgtest.Options{MaxConns: 8})
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	s := sender(t, db)
	sendTx(t, db, s, "d", msg("k-1", "k", "1"))
	sendTx(t, db, s, "d", msg("x-1", "x", "1"))
	sendTx(t, db, s, "d", msg("k-2", "k", "2"))

	owner, err := db.Pool.Begin(ctx) // another round owning k
	require.NoError(t, err)
	defer func() { _ = owner.Rollback(ctx) }()
	_, err = owner.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "oncely.outbox.relay\n"+db.Schema+"\nd\n=k")
	require.NoError(t, err)

	b := memBroker(t)
	r := newRelay(t, db, b, outbox.Config{Workers: 1, NoListen: true})
	var once sync.Once
	r.SetAfterWindow(func(context.Context) {
		once.Do(func() {
			// The owner's round ends: k-1 published and marked.
			_, err := owner.Exec(ctx, "UPDATE "+table+" SET published_at = now() WHERE message_id = 'k-1'")
			if err == nil {
				err = owner.Commit(ctx)
			}
			if err != nil {
				t.Error(err)
			}
		})
	})
	startRelay(t, r)
	b.waitDistinct(t, 2)
	waitUnpublished(t, db, 0)
	var ids []string
	for _, p := range b.snapshot() {
		ids = append(ids, p.msg.ID)
	}
	require.Equal(t, []string{"x-1", "k-2"}, ids, "k-1 was its owner's; x-1 and k-2 once each")
}

// TestOwnedKeyIsLeftWhole: a round publishes nothing of a key another round
// owns, and the key's rows go out once the owner is done, in order. The bug
// it catches: a claim that reads the rows of keys it failed to lock.
func TestOwnedKeyIsLeftWhole(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, pgtest.Options{MaxConns: 8})
	s := sender(t, db)
	sendTx(t, db, s, "d", msg("k-1", "k", "1"))
	sendTx(t, db, s, "d", msg("x-1", "x", "1"))
	sendTx(t, db, s, "d", msg("k-2", "k", "2"))
	owner, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = owner.Rollback(ctx) }()
	_, err = owner.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "oncely.outbox.relay\n"+db.Schema+"\nd\n=k")
	require.NoError(t, err)

	b := memBroker(t)
	startRelay(t, newRelay(t, db, b, outbox.Config{Workers: 1, NoListen: true}))
	b.waitDistinct(t, 1)
	waitUnpublished(t, db, 2)
	require.Equal(t, "x-1", b.snapshot()[0].msg.ID)
	require.NoError(t, owner.Rollback(ctx))
	b.waitDistinct(t, 3)
	var ids []string
	for _, p := range b.snapshot() {
		ids = append(ids, p.msg.ID)
	}
	require.Equal(t, []string{"x-1", "k-1", "k-2"}, ids)
}
