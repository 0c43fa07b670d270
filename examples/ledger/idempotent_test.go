package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer/consumertest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store/postgres"
)

// TestLedgerHandlerIsIdempotent is the one-call handler test docs/teams.md
// shows: the -dedupe=true handler, a Postgres store, and a count of the
// ledger entries a payment wrote. (The -dedupe=false handler, which writes
// in its own transaction through the pool, is reported broken in the failed
// attempt's case; it exists to measure duplicates.)
func TestLedgerHandlerIsIdempotent(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	require.NoError(t, createTables(ctx, db.Pool))
	st, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, NoPruning: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })

	entries := func(ctx context.Context, id string) (int, error) {
		var n int
		err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger_entries WHERE message_id = $1", id).Scan(&n)
		return n, err
	}
	msg := consumertest.NewMessage("pay-1", []byte(`{"account":"acc-17","amount_cents":250}`))
	consumertest.Idempotent(t, &handler{}, st, msg, entries)
	// The -batch handler, whose set-based statements must commit with the
	// batch's claims too.
	consumertest.Idempotent(t, postgres.BatchHandlerFunc((&batchHandler{}).HandleBatch), st, msg, entries)

	err = consumertest.CheckIdempotent(ctx, &plainHandler{pool: db.Pool}, st, msg, entries)
	require.ErrorContains(t, err, `case "after a failed attempt"`)

	// The ledger.applied events, counted in the outbox: one per payment in
	// every case, so sent in the claim's transaction. Catches: an event sent
	// in a transaction of its own, or after the commit (a failed attempt
	// leaves it behind, the retry sends another).
	ev, err := newEvents(config{events: "ledger-applied", schema: db.Schema})
	require.NoError(t, err)
	sent := func(ctx context.Context, id string) (int, error) {
		var n int
		err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+db.Schema+".outbox WHERE destination = 'ledger-applied' AND convert_from(body, 'UTF8')::jsonb->>'payment_id' = $1", id).Scan(&n)
		return n, err
	}
	consumertest.Idempotent(t, &handler{events: ev}, st, msg, sent)
	consumertest.Idempotent(t, postgres.BatchHandlerFunc((&batchHandler{events: ev}).HandleBatch), st, msg, sent)
}
