package outbox_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/proxytest"
	"github.com/oncely/oncely/outbox"
)

// TestCrashBetweenPublishAndMark: the relay's connection dies after the
// broker confirmed a round and before it was marked. The rows stay
// unpublished and go out again with the same IDs; none is lost.
func TestCrashBetweenPublishAndMark(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	for i := range 5 {
		sendTx(t, db, s, "orders", msg("m"+strconv.Itoa(i), "k", strconv.Itoa(i+1)))
	}
	r := newRelay(t, db, b, outbox.Config{Workers: 1})
	var crashed atomic.Bool
	r.SetAfterPublish(func(ctx context.Context, pid uint32) {
		if crashed.CompareAndSwap(false, true) {
			_, err := db.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid))
			require.NoError(t, err)
		}
	})
	startRelay(t, r)
	waitUnpublished(t, db, 0)
	require.True(t, crashed.Load())

	got := b.snapshot()
	require.Len(t, got, 10, "each message published twice: before the crash and after")
	for i, p := range got {
		require.Equal(t, "m"+strconv.Itoa(i%5), p.msg.ID)
	}
	checkKeyOrder(t, got, 5)
}

// TestPublishFailureKeepsRows: while Publish fails nothing is marked, the
// failure counter rises, no row is blamed (none of the destination passed),
// and the relay resumes by itself.
func TestPublishFailureKeepsRows(t *testing.T) {
	db := pgtest.New(t)
	b := memBroker(t)
	s := sender(t, db)
	down := errors.New("broker down")
	b.setFail(func(string) error { return down })
	reg := prometheus.NewRegistry()
	startRelay(t, newRelay(t, db, b, outbox.Config{Registerer: reg}))
	sendTx(t, db, s, "orders", msg("a", "k", "1"), msg("b", "k", "2"))

	for range 3 {
		b.waitCall(t)
	}
	require.Equal(t, 2, unpublished(t, db))
	require.Empty(t, b.snapshot())
	b.setFail(nil)
	b.waitDistinct(t, 2)
	waitUnpublished(t, db, 0)
	require.GreaterOrEqual(t, counter(t, reg, outbox.NamePublishFailures), 4.0)
	require.Equal(t, 2.0, counter(t, reg, outbox.NamePublished))
	require.Zero(t, counter(t, reg, outbox.NameRefused), "no row passed beside them: an outage, nobody's fault")
}

// TestRabbitMQOutage publishes to real RabbitMQ through a TCP proxy, cuts
// the proxy (the shared broker keeps running), and checks that no row is
// marked while the broker is unreachable and that every row is published
// once it is back.
func TestRabbitMQOutage(t *testing.T) {
	db := pgtest.New(t)
	raw := envtest.RabbitMQ(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	p, err := proxytest.New(u.Host)
	require.NoError(t, err)
	defer p.Close()
	u.Host = p.Addr()
	ctx := context.Background()
	ab, err := adapters.Open(ctx, u.String(), adapters.WithLogger(quiet()))
	if err != nil {
		envtest.Missing(t, "RabbitMQ", err)
		return
	}
	defer ab.Close()
	b := newRecorder(ab)
	dest := pgtest.SchemaName(t.Name())
	s := sender(t, db)
	startRelay(t, newRelay(t, db, b, outbox.Config{PublishTimeout: 2 * time.Second}))

	sendTx(t, db, s, dest, msg("before", "k", "1"))
	b.waitDistinct(t, 1)
	waitUnpublished(t, db, 0)

	p.Refuse()
	p.Cut()
	sendTx(t, db, s, dest, msg("during-1", "k", "2"), msg("during-2", "k", "3"))
	for range 2 {
		b.waitCall(t)
	}
	require.Equal(t, 2, unpublished(t, db), "nothing marked while the broker is unreachable")

	p.Accept()
	b.waitDistinct(t, 3)
	waitUnpublished(t, db, 0)
	checkKeyOrder(t, b.snapshot(), 3)
}

// counter returns the value of the counter name in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
