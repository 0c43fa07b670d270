package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// eventsCheck names where a ledger's events are: its tables' schema, the
// store schema holding the outbox, the destination and the consumer name.
type eventsCheck struct {
	pool                 *pgxpool.Pool
	schema, outboxSchema string
	destination          string
	consumerName         string
}

// want returns the events the ledger must have sent, in application order:
// one per ledger entry, the k-th application of a payment (k > 0 only with
// -dedupe=false) with ID DeriveID(consumer, payment, k), key the account,
// and seq the entry's rank among its account's entries. Entries of one
// account are numbered in the order their transactions locked the account,
// which is commit order, the order seq must follow.
func (c eventsCheck) want(t *testing.T) []*consumer.Message {
	rows, err := c.pool.Query(context.Background(), "SELECT message_id, account, amount_cents FROM "+c.schema+".ledger_entries ORDER BY id")
	require.NoError(t, err)
	var (
		out     []*consumer.Message
		times   = map[string]int{}
		seqs    = map[string]int64{}
		e       appliedEvent
		payment string
	)
	_, err = pgx.ForEachRow(rows, []any{&payment, &e.Account, &e.AmountCents}, func() error {
		seqs[e.Account]++
		ev := appliedEvent{PaymentID: payment, Account: e.Account, AmountCents: e.AmountCents, Seq: seqs[e.Account]}
		body, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		out = append(out, &consumer.Message{ID: outbox.DeriveID(c.consumerName, payment, times[payment]), Key: e.Account, Body: body})
		times[payment]++
		return nil
	})
	require.NoError(t, err)
	var mismatched int
	require.NoError(t, c.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+c.schema+`.ledger_accounts a
		WHERE applied <> (SELECT count(*) FROM `+c.schema+`.ledger_entries e WHERE e.account = a.account)`).Scan(&mismatched))
	require.Zero(t, mismatched, "ledger_accounts.applied counts the account's entries")
	return out
}

// outboxRow is one row of the ledger's destination in the outbox.
type outboxRow struct {
	id, key   string
	body      []byte
	published bool
}

func (c eventsCheck) rows(t *testing.T) []outboxRow {
	rows, err := c.pool.Query(context.Background(), "SELECT message_id, msg_key, body, published_at IS NOT NULL FROM "+c.outboxSchema+".outbox WHERE destination = $1 ORDER BY seq", c.destination)
	require.NoError(t, err)
	var out []outboxRow
	var r outboxRow
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.key, &r.body, &r.published}, func() error { out = append(out, r); return nil })
	require.NoError(t, err)
	return out
}

// checkOutbox waits until the outbox holds want's events, every one
// published (unless published is false: then none may be), and checks each
// event's ID, key and body and that the rows of one account are in seq
// order. Catches: an event sent outside the payment's transaction (missing
// or extra after a failed attempt), a wrong ID, key or body, and a seq
// counted outside the account's row lock (gaps, repeats, order).
func (c eventsCheck) checkOutbox(t *testing.T, want []*consumer.Message, published bool) {
	t.Helper()
	var got []outboxRow
	require.Eventually(t, func() bool {
		got = c.rows(t)
		if len(got) != len(want) {
			return false
		}
		for _, r := range got {
			if r.published != published {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "outbox rows of %s (published=%t), want %d", c.destination, published, len(want))
	byID := map[string]outboxRow{}
	last := map[string]int64{}
	for _, r := range got {
		_, dup := byID[r.id]
		require.False(t, dup, "event %s sent twice", r.id)
		byID[r.id] = r
		var ev appliedEvent
		require.NoError(t, json.Unmarshal(r.body, &ev))
		require.Equal(t, last[r.key]+1, ev.Seq, "account %s: events in row (commit) order carry seq 1, 2, 3, …: %s", r.key, r.body)
		last[r.key] = ev.Seq
	}
	for _, m := range want {
		r, ok := byID[m.ID]
		require.True(t, ok, "no event %s for %s", m.ID, m.Body)
		require.Equal(t, m.Key, r.key, "key of %s", m.ID)
		require.JSONEq(t, string(m.Body), string(r.body), "body of %s", m.ID)
	}
}

// checkBroker consumes the destination as consumer name (an oncely
// consumer counting deliveries) and checks that every event of want arrived
// once, with its ID, key and body. Catches: a row marked published whose
// message never reached the broker.
func (c eventsCheck) checkBroker(t *testing.T, b adapters.Broker, name string, want []*consumer.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src, err := b.Source(ctx, c.destination, name)
	require.NoError(t, err)
	got := make(chan *consumer.Message, len(want)+100)
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		select {
		case got <- m.Clone():
		default: // more than want plus 100: reported as missing or duplicates below
		}
		return nil
	})
	cons, err := consumer.New(src, h, consumer.Config{Name: name, Duplicates: consumer.AllowDuplicates("the test counts every delivery"),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cons.Run(runCtx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()
	pending := map[string]*consumer.Message{}
	for _, m := range want {
		pending[m.ID] = m
	}
	seen := map[string]bool{}
	for len(pending) > 0 {
		var m *consumer.Message
		select {
		case m = <-got:
		case <-ctx.Done():
			t.Fatalf("%d events not on the broker", len(pending))
		}
		require.False(t, seen[m.ID], "event %s delivered twice", m.ID)
		seen[m.ID] = true
		w, ok := pending[m.ID]
		require.True(t, ok, "unexpected event %s: %s", m.ID, m.Body)
		require.Equal(t, w.Key, m.Key, "key of %s on the broker", m.ID)
		require.JSONEq(t, string(w.Body), string(m.Body), "body of %s on the broker", m.ID)
		delete(pending, m.ID)
	}
}

// runRelay publishes c's outbox through brokerURL until the returned stop:
// the separate `oncely relay` process of -relay=false.
func runRelay(t *testing.T, pool *pgxpool.Pool, brokerURL, schema string) (stop func()) {
	b, err := adapters.Open(context.Background(), brokerURL)
	require.NoError(t, err)
	r, err := outbox.NewRelay(pool, b, outbox.Config{Schema: schema})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, b.Close())
	}
}

// TestEventsConfig: events go to "ledger-applied" through an in-process
// relay by default; -events "" turns them off, -relay=false the relay.
func TestEventsConfig(t *testing.T) {
	env := func(k string) string { return map[string]string{"DATABASE_URL": "postgres://x"}[k] }
	c, err := parseConfig(nil, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "ledger-applied", c.events)
	require.True(t, c.relay)
	c, err = parseConfig([]string{"-events", "", "-relay=false"}, env, io.Discard)
	require.NoError(t, err)
	require.Empty(t, c.events)
	require.False(t, c.relay)
	ev, err := newEvents(c)
	require.NoError(t, err)
	require.Nil(t, ev, "-events '' sends nothing")
	_, err = newEvents(config{events: "x", schema: "bad schema"})
	require.Error(t, err)
}

// TestRelayFailureStops: a relay whose Run fails while the consumer runs
// (here: the same Relay started twice, which Run refuses) stops the ledger
// through failed and makes stop return the error. Catches: the in-process
// relay's end ignored, the ledger consuming on with nothing publishing.
func TestRelayFailureStops(t *testing.T) {
	db := pgtest.New(t)
	b, err := adapters.Open(context.Background(), "mem://")
	require.NoError(t, err)
	defer b.Close()
	r, err := newRelay(db.Pool, b, config{schema: db.Schema}, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	failed := make(chan error, 2)
	report := func(err error) { failed <- err }
	runners := []*relayRunner{startRelay(context.Background(), r, report), startRelay(context.Background(), r, report)}
	select {
	case err := <-failed:
		require.ErrorContains(t, err, "already running")
	case <-time.After(30 * time.Second):
		t.Fatal("the failing relay was not reported")
	}
	var errs []string
	for _, rr := range runners {
		if err := rr.stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	require.Len(t, errs, 1, "stop returns nil for the relay told to stop, the failure for the other")
	require.Contains(t, errs[0], "outbox relay stopped while the consumer ran")
	require.Empty(t, failed, "one failure reported")
}

// TestAppliedColumnAdded: tables of a ledger before events get the applied
// column, counted from their entries, so the next event of an account
// continues its count. Catches: a start-up that leaves old tables without
// the column (every payment then fails) or starts their seqs at 1 again.
func TestAppliedColumnAdded(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE ledger_accounts (account text PRIMARY KEY, balance_cents bigint NOT NULL DEFAULT 0);
		CREATE TABLE ledger_entries (id bigserial PRIMARY KEY, message_id text NOT NULL, account text NOT NULL, amount_cents bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO ledger_accounts VALUES ('acc-1', 3), ('acc-2', 1);
		INSERT INTO ledger_entries (message_id, account, amount_cents) VALUES ('a', 'acc-1', 1), ('b', 'acc-1', 2), ('c', 'acc-2', 1)`)
	require.NoError(t, err)
	require.NoError(t, createTables(ctx, db.Pool))
	require.NoError(t, createTables(ctx, db.Pool), "a second start finds the column")
	rows, err := db.Pool.Query(ctx, "SELECT account, applied FROM ledger_accounts ORDER BY 1")
	require.NoError(t, err)
	got := map[string]int64{}
	var a string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&a, &n}, func() error { got[a] = n; return nil })
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"acc-1": 2, "acc-2": 1}, got)
}
