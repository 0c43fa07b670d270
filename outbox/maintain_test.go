package outbox_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
)

// listeners counts the test schema's connections whose last statement was
// LISTEN (pgtest names each connection after its schema).
func listeners(t *testing.T, db *pgtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'", db.Schema).Scan(&n))
	return n
}

// TestListenWakesRelay: with polling an hour apart, only the notification
// Send commits can wake the relay.
func TestListenWakesRelay(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	r := newRelay(t, db, b, outbox.Config{PollInterval: time.Hour, Workers: 2})
	listening := make(chan struct{}, 1)
	r.SetListening(func() { listening <- struct{}{} })
	startRelay(t, r)
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("relay never listened")
	}
	require.Equal(t, 1, listeners(t, db))
	sendTx(t, db, s, "orders", msg("n1", "k", "1"))
	b.waitDistinct(t, 1)
	sendTx(t, db, s, "orders", msg("n2", "k", "2"))
	b.waitDistinct(t, 2)
}

// TestNoListenPolls: with NoListen the relay opens no LISTEN connection (as
// behind PgBouncer's transaction pooling) and still publishes, by polling.
func TestNoListenPolls(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	r := newRelay(t, db, b, outbox.Config{NoListen: true, PollInterval: 10 * time.Millisecond})
	r.SetListening(func() { t.Error("NoListen relay listened") })
	startRelay(t, r)
	sendTx(t, db, s, "orders", msg("p1", "k", "1"))
	b.waitDistinct(t, 1)
	require.Zero(t, listeners(t, db))
}

// TestCleanupInBoundedBatches: Cleanup deletes only published rows older
// than the retention, CleanupBatch rows per DELETE.
func TestCleanupInBoundedBatches(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	r := newRelay(t, db, memBroker(t), outbox.Config{Retention: time.Minute, CleanupBatch: 10, Registerer: reg})
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	insert := func(n int, publishedAt string) {
		for i := range n {
			_, err := db.Pool.Exec(ctx, fmt.Sprintf("INSERT INTO %s (message_id, destination, body, published_at) VALUES ($1, 'd', '', %s)", table, publishedAt), "r"+strconv.Itoa(i)+publishedAt)
			require.NoError(t, err)
		}
	}
	insert(25, "now() - interval '1 hour'")
	insert(3, "now()")
	insert(4, "NULL")

	n, err := r.Cleanup(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 25, n)
	require.Equal(t, 3, countRows(t, db, "published_at IS NOT NULL"))
	require.Equal(t, 4, unpublished(t, db))
	require.Equal(t, 25.0, counter(t, reg, outbox.NameDeleted))

	depth, age, err := r.Depth(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4, depth)
	require.GreaterOrEqual(t, age, time.Duration(0))
}

func countRows(t *testing.T, db *pgtest.DB, where string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM "+pgx.Identifier{db.Schema, outbox.Table}.Sanitize()+" WHERE "+where).Scan(&n))
	return n
}

// TestDepthMetrics: the maintenance loop reports depth and the oldest
// unpublished row's age while the broker refuses everything.
func TestDepthMetrics(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	b.setFail(func(string) error { return fmt.Errorf("down") })
	s := sender(t, db)
	sendTx(t, db, s, "orders", msg("a", "k", "1"), msg("b", "j", "1"))
	reg := prometheus.NewRegistry()
	startRelay(t, newRelay(t, db, b, outbox.Config{Registerer: reg, MaintenanceInterval: 10 * time.Millisecond}))
	for range 3000 {
		if gauge(t, reg, outbox.NameDepth) == 2 {
			break
		}
		waitABit()
	}
	require.Equal(t, 2.0, gauge(t, reg, outbox.NameDepth))
	require.GreaterOrEqual(t, gauge(t, reg, outbox.NameOldestAge), 0.0)
	require.Equal(t, 2, unpublished(t, db))
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestConfigReportsEveryProblem(t *testing.T) {
	_, err := outbox.NewRelay(nil, nil, outbox.Config{Schema: "Bad-Schema", BatchSize: -1, Workers: -2, PollInterval: -time.Second, BackoffMin: time.Minute, BackoffMax: time.Second, Refused: retry.Policy{Multiplier: 0.5}})
	require.Error(t, err)
	for _, want := range []string{"Bad-Schema", "BatchSize", "Workers", "PollInterval", "BackoffMin", "Refused", "nil pool", "nil broker"} {
		require.Contains(t, err.Error(), want)
	}
	_, err = outbox.NewSender("Bad-Schema")
	require.Error(t, err)
}

// TestRunNeedsMigration: a relay on a schema without outbox_dead (migration
// 0004 not applied) refuses to run and says what to do.
func TestRunNeedsMigration(t *testing.T) {
	db := pgtest.New(t)
	_, err := db.Pool.Exec(context.Background(), "DROP TABLE "+pgx.Identifier{db.Schema, outbox.DeadTable}.Sanitize())
	require.NoError(t, err)
	r := newRelay(t, db, memBroker(t), outbox.Config{})
	err = r.Run(context.Background())
	require.ErrorContains(t, err, "run oncely migrate")
}
