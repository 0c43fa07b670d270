package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/retry"
)

// natsTopology: the source, retry, dead-letter and events streams, one of
// each; then deleted.
func natsTopology(t *testing.T, brokerURL, source, consumerName, events string, _ retry.Tiers) {
	nc, err := natsgo.Connect(brokerURL)
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	want := []string{nats.StreamName(source), nats.StreamName(nats.RetrySubject(source, consumerName)), nats.StreamName(nats.DeadLetterSubject(source, consumerName))}
	if events != "" {
		want = append(want, nats.StreamName(events))
	}
	slices.Sort(want)
	t.Cleanup(func() {
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []string
		names := js.StreamNames(ctx)
		for n := range names.Name() {
			if strings.HasPrefix(n, nats.StreamName(source)) {
				got = append(got, n)
			}
		}
		require.NoError(t, names.Err())
		for _, n := range got {
			_ = js.DeleteStream(ctx, n)
		}
		slices.Sort(got)
		if !t.Failed() {
			require.Equal(t, want, got, "the streams one instance creates")
		}
	})
}
