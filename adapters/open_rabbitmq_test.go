package adapters_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// TestOpenRabbitMQWrongPassword opens amqp:// with a wrong password.
// Catches: the tools connection reporting a refused login as "no RabbitMQ
// answers" (after the 15 s dial timeout), and the password in the error.
func TestOpenRabbitMQWrongPassword(t *testing.T) {
	const secret = "wrong-s3cret-pw"
	u, err := url.Parse(envtest.RabbitMQ(t))
	require.NoError(t, err)
	u.User = url.UserPassword("guest", secret)
	start := time.Now()
	b, err := adapters.Open(context.Background(), u.String())
	require.Nil(t, b)
	require.Less(t, time.Since(start), 6*time.Second)
	require.ErrorIs(t, err, rabbitmq.ErrLoginRefused)
	require.Contains(t, err.Error(), `login refused for user "guest" (check the URL's user and password)`)
	require.NotContains(t, err.Error(), "no RabbitMQ answers")
	require.NotContains(t, err.Error(), secret)
}

// TestOpenRabbitMQTLS publishes and consumes through a Source over amqps://
// with the test CA, and reads the backlog. Catches: tls_* parameters
// refused or dropped with the query, and any of the three connections
// (Publisher, Source session, tools) dialling without them: the test CA is
// in no system pool, so that connection fails certificate verification.
func TestOpenRabbitMQTLS(t *testing.T) {
	raw, ca := envtest.RabbitMQTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := adapters.Open(ctx, raw+"?tls_ca="+url.QueryEscape(ca)+"&tiers=100ms,1s&prefetch=32") // consume runs MaxInFlight 32
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	source := fmt.Sprintf("tls-%d", time.Now().UnixNano())
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "over-tls", Body: []byte("x")}))
	seen := consume(t, ctx, b, source, "ledger", 1, func(context.Context, *consumer.Message) error { return nil })
	require.Len(t, seen, 1)
	require.Equal(t, "over-tls", seen[0].ID)
	lines, err := b.Backlog(ctx, source, "ledger")
	require.NoError(t, err)
	require.Equal(t, int64(0), lines[0].Lag)
}

// TestOpenRabbitMQTLSWrongCA opens amqps:// trusting a CA that did not sign
// the broker's certificate, then with a server name the certificate does
// not carry, then amqp:// on the TLS port. Catches: a TLS failure reported
// as an unreachable broker or a refused login, a slow failure, the
// password in the error, and tls_server_name ignored.
func TestOpenRabbitMQTLSWrongCA(t *testing.T) {
	raw, _ := envtest.RabbitMQTLS(t)
	other, _, _ := writeTestPKI(t, t.TempDir()) // a CA that is not the broker's
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), "s3cret-tls-pw")
	start := time.Now()
	b, err := adapters.Open(context.Background(), u.String()+"?tls_ca="+url.QueryEscape(other))
	require.Nil(t, b)
	require.Less(t, time.Since(start), 6*time.Second)
	require.ErrorContains(t, err, "TLS: the broker's certificate is not trusted")
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	require.NotErrorIs(t, err, rabbitmq.ErrLoginRefused)
	require.NotContains(t, err.Error(), "s3cret-tls-pw")

	// The right CA, a name the certificate does not carry.
	_, ca := envtest.RabbitMQTLS(t)
	_, err = adapters.Open(context.Background(), raw+"?tls_ca="+url.QueryEscape(ca)+"&tls_server_name=rabbit.example")
	require.ErrorContains(t, err, "TLS: the broker's certificate is not trusted")
	require.ErrorContains(t, err, "not rabbit.example")

	// amqp:// on the TLS port.
	u.Scheme = "amqp"
	_, err = adapters.Open(context.Background(), u.String())
	require.ErrorContains(t, err, "the answer is not AMQP (a TLS port? write amqps:// for it)")
}

// TestOpenRabbitMQTLSParameters checks the tls_* parameters before any
// connection. Catches: TLS options silently ignored on amqp://, half a
// client key pair accepted, and a CA file that holds no certificate.
func TestOpenRabbitMQTLSParameters(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct{ url, want string }{
		{"amqp://guest:secret@127.0.0.1:1/?tls_ca=/x", "needs amqps://"},
		{"amqps://guest:secret@127.0.0.1:1/?tls_cert=/x", "tls_cert without tls_key"},
		{"amqps://guest:secret@127.0.0.1:1/?tls_ca=" + url.QueryEscape(notPEM), "no PEM certificate in the file"},
		{"amqps://guest:secret@127.0.0.1:1/?tls_ca=/nonexistent/ca.pem", "no such file"},
		{"amqps://guest:secret@127.0.0.1:1/?tls_insecure_skip_verify=yes", "want true or false"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := adapters.Open(context.Background(), tc.url)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret")
		})
	}
}
