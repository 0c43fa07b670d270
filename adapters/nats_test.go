package adapters_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
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
	} {
		t.Run(tc.url, func(t *testing.T) {
			b, err := adapters.Open(context.Background(), tc.url)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
