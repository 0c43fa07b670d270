package outbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	natsadapter "github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// TestNATSDeletedStreamDelaysOnlyItself: on real NATS JetStream, the stream
// of one destination is deleted under the relay (whose publisher expects
// it, so every publish to it fails), with 20 of its rows ahead of 10 rows of
// another destination, rounds of 5. The other destination publishes every
// row while the deleted one keeps failing.
func TestNATSDeletedStreamDelaysOnlyItself(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	url := envtest.NATS(t)
	ab, err := adapters.Open(ctx, url, adapters.WithLogger(quiet()))
	if err != nil {
		envtest.Missing(t, "NATS", err)
		return
	}
	defer ab.Close()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	gone, ok := "outbox-gone-"+hex.EncodeToString(suffix[:]), "outbox-ok-"+hex.EncodeToString(suffix[:])
	require.NoError(t, ab.Publish(ctx, gone, msg("first", "g", "0")))
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, natsadapter.StreamName(gone)))
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), natsadapter.StreamName(ok)) })

	b := newRecorder(ab)
	s := sender(t, db)
	for i := range 20 {
		sendTx(t, db, s, gone, msg("g"+strconv.Itoa(i), "g"+strconv.Itoa(i%4), strconv.Itoa(i/4+1)))
	}
	for i := range 10 {
		sendTx(t, db, s, ok, msg("o"+strconv.Itoa(i), "o"+strconv.Itoa(i%3), strconv.Itoa(i/3+1)))
	}
	start := time.Now()
	startRelay(t, newRelay(t, db, b, outbox.Config{Workers: 1, BatchSize: 5}))

	b.waitDistinct(t, 10)
	t.Logf("the other destination's 10 rows published %s after the relay started; %d calls to the deleted one", time.Since(start).Round(time.Millisecond), b.callsTo(gone))
	for _, p := range b.snapshot() {
		require.Equal(t, ok, p.dest)
	}
	checkKeyOrder(t, b.snapshot(), 10)
	waitUnpublished(t, db, 20)
	require.Positive(t, b.callsTo(gone), "the deleted destination was tried")
}
