package adapters_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/internal/envtest"
)

// The Broker contract, redrive and purge on NATS JetStream.

func TestBrokerNATS(t *testing.T) {
	testBroker(t, envtest.NATS(t)+"?prefetch=32") // the runtime below runs MaxInFlight 32
}

func TestRedriveNATS(t *testing.T) { runRedrive(t, envtest.NATS(t)) }

func TestPurgeNATS(t *testing.T) { runPurge(t, envtest.NATS(t)) }

func TestOpenNATSRejectsBadParams(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"nats://127.0.0.1:4222?prefetch=0", `prefetch="0": want a positive integer`},
		{"nats://127.0.0.1:4222?ack_wait=soon", `ack_wait="soon": want a positive duration`},
		{"nats://127.0.0.1:4222?tls_ca=ca.pem", "needs tls://"},
		{"nats://127.0.0.1:4222?prefetsh=8", `unknown query parameter "prefetsh"`},
		{"nats://", "no host"},
		{"nats://127.0.0.1:4222?replicas=-1", `replicas="-1": want a positive integer`},
		{"nats://127.0.0.1:4222?replicas=three&prefetch=x", `replicas="three": want a positive integer`},
		{"nats://127.0.0.1:4222?replicas=three&prefetch=x", `prefetch="x": want a positive integer`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			b, err := adapters.Open(context.Background(), tc.url)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// replicas=N reaches the streams a Source creates: on the single test server
// replicas=1 works and replicas=3 fails the Source with the server's reason.
func TestOpenNATSReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	source := fmt.Sprintf("open.replicas.%d", time.Now().UnixNano())
	one, err := adapters.Open(ctx, envtest.NATS(t)+"?replicas=1")
	require.NoError(t, err)
	defer func() { require.NoError(t, one.Close()) }()
	src, err := one.Source(ctx, source, "c")
	require.NoError(t, err)
	require.NoError(t, src.Close(ctx))
	t.Cleanup(func() {
		deleteNATSStreams(t, source, nats.RetrySubject(source, "c"), nats.DeadLetterSubject(source, "c"))
	})

	three, err := adapters.Open(ctx, envtest.NATS(t)+"?replicas=3")
	require.NoError(t, err)
	defer func() { require.NoError(t, three.Close()) }()
	_, err = three.Source(ctx, source+"x", "c")
	require.Error(t, err)
	require.Contains(t, err.Error(), "replicas > 1 not supported")
	require.NoError(t, ctx.Err(), "the Source failed at once, not at the deadline")
}

// deleteNATSStreams deletes the streams of subjects from the test server.
func deleteNATSStreams(t *testing.T, subjects ...string) {
	nc, err := natsgo.Connect(envtest.NATS(t))
	if err != nil {
		t.Errorf("connecting to delete streams: %v", err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range subjects {
		if err := js.DeleteStream(ctx, nats.StreamName(s)); err != nil {
			t.Errorf("deleting the stream of %s: %v", s, err)
		}
	}
}
