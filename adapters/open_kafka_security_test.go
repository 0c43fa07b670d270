package adapters_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
)

// secureURL is scheme://user:pass@<the SASL_SSL listener>?query.
func secureURL(sb kafkatest.SecureBroker, scheme, user, pass string, query url.Values) string {
	u := url.URL{Scheme: scheme, Host: sb.Addr, RawQuery: query.Encode()}
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u.String()
}

// captureLogs returns an Open option logging everything at debug level into
// the returned buffer.
func captureLogs() (adapters.Option, *envtest.Buffer) {
	var buf envtest.Buffer
	return adapters.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))), &buf
}

// TestKafkaSASLOverTLS publishes, consumes, dead-letters and reports the
// backlog through the SASL_SSL listener with each mechanism. Catches: the TLS
// or SASL options reaching only some of the broker's connections (the tools
// Client of Publish and Backlog, the Source's group and admin clients, the
// dead-letter reader): the broker accepts no unauthenticated connection on
// this listener, so any of them would fail. Catches also a mechanism name
// mapped to the wrong franz-go mechanism, and the password in the logs.
func TestKafkaSASLOverTLS(t *testing.T) {
	sb := kafkatest.Secure(t)
	for _, mech := range []string{"", "scram-sha-256", "scram-sha-512", "plain"} {
		t.Run("sasl="+mech, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			q := url.Values{"tls_ca": {sb.CA}, "tiers": {"100ms,1s"}}
			if mech != "" {
				q.Set("sasl", mech)
			}
			logs, buf := captureLogs()
			b, err := adapters.Open(ctx, secureURL(sb, "kafkas", sb.User, sb.Password, q), logs)
			require.NoError(t, err)
			defer func() { require.NoError(t, b.Close()) }()

			source := fmt.Sprintf("secure-%d", mrand.Uint64())
			const name = "ledger"
			require.NoError(t, b.Publish(ctx, source,
				&consumer.Message{ID: "ok", Body: []byte("ok")}, &consumer.Message{ID: "bad", Body: []byte("bad")}))
			seen := consume(t, ctx, b, source, name, 2, func(_ context.Context, m *consumer.Message) error {
				if string(m.Body) == "bad" {
					return consumer.Permanent(fmt.Errorf("bad message"))
				}
				return nil
			})
			require.Len(t, seen, 2)
			dls, err := b.DeadLetters(ctx, source, name, 0)
			require.NoError(t, err)
			require.Len(t, dls, 1)
			require.Equal(t, "bad", dls[0].Message.ID)
			lines, err := b.Backlog(ctx, source, name)
			require.NoError(t, err)
			var dead int64
			for _, l := range lines {
				dead += max(0, l.DeadLetters)
			}
			require.Equal(t, int64(1), dead, "%+v", lines)
			require.NotContains(t, buf.String(), sb.Password)
		})
	}
}

// TestKafkaSecureFailures checks that each misconfiguration of a secure
// connection fails Open within seconds with an error naming the cause, and
// that neither the error nor the logs show a password. Catches: a wrong
// password reported as a timeout or not at all (a lazy client that never
// authenticates), a CA, server name or skip-verify option ignored, a
// plaintext client hanging on a TLS port, and a password in an error.
func TestKafkaSecureFailures(t *testing.T) {
	sb := kafkatest.Secure(t)
	dir := t.TempDir()
	otherCA, clientCert, clientKey := writeTestPKI(t, dir)
	const wrongPassword = "wrong-Pa55word-xyz"
	for _, tc := range []struct {
		name, url, want string // want "" means Open succeeds
		log             string // in the logs, when set
	}{
		// The broker names the mechanism the client chose: these also catch
		// a sasl= value mapped to the wrong mechanism.
		{name: "wrong password scram", url: secureURL(sb, "kafkas", sb.User, wrongPassword, url.Values{"tls_ca": {sb.CA}}), want: "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{name: "wrong password plain", url: secureURL(sb, "kafkas", sb.User, wrongPassword, url.Values{"tls_ca": {sb.CA}, "sasl": {"plain"}}), want: "Authentication failed: Invalid username or password"},
		{name: "unknown user", url: secureURL(sb, "kafkas", "nobody", sb.Password, url.Values{"tls_ca": {sb.CA}, "sasl": {"scram-sha-256"}}), want: "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{name: "no SASL", url: secureURL(sb, "kafkas", "", "", url.Values{"tls_ca": {sb.CA}}), want: "no Kafka broker answers"},
		{name: "wrong CA", url: secureURL(sb, "kafkas", sb.User, sb.Password, url.Values{"tls_ca": {otherCA}}), want: "x509: certificate signed by unknown authority"},
		{name: "system CAs", url: secureURL(sb, "kafkas", sb.User, sb.Password, nil), want: "x509: certificate signed by unknown authority"},
		{name: "wrong server name", url: secureURL(sb, "kafkas", sb.User, sb.Password, url.Values{"tls_ca": {sb.CA}, "tls_server_name": {"kafka.example.com"}}), want: "valid for localhost, not kafka.example.com"},
		{name: "server name", url: secureURL(sb, "kafkas", sb.User, sb.Password, url.Values{"tls_ca": {sb.CA}, "tls_server_name": {"localhost"}})},
		{name: "skip verify", url: secureURL(sb, "kafkas", sb.User, sb.Password, url.Values{"tls_insecure_skip_verify": {"true"}})},
		{name: "tls=true", url: secureURL(sb, "kafka", sb.User, sb.Password, url.Values{"tls": {"true"}, "tls_ca": {sb.CA}})},
		{name: "client certificate", url: secureURL(sb, "kafkas", sb.User, sb.Password, url.Values{"tls_ca": {sb.CA}, "tls_cert": {clientCert}, "tls_key": {clientKey}})},
		{name: "plaintext to TLS", url: secureURL(sb, "kafka", sb.User, sb.Password, nil), want: "plaintext connection speaking to a tls endpoint"},
		{name: "PLAIN without TLS", url: "kafka://" + url.UserPassword(sb.User, sb.Password).String() + "@127.0.0.1:1?sasl=plain", want: "no Kafka broker answers", log: "SASL PLAIN without TLS sends the password unencrypted"},
		{name: "nothing listening", url: "kafkas://" + url.UserPassword(sb.User, sb.Password).String() + "@127.0.0.1:1?tls_ca=" + url.QueryEscape(sb.CA), want: "no Kafka broker answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			logs, buf := captureLogs()
			start := time.Now()
			b, err := adapters.Open(ctx, tc.url, logs)
			took := time.Since(start)
			require.Less(t, took, 6*time.Second)
			require.NotContains(t, buf.String(), sb.Password)
			require.NotContains(t, buf.String(), wrongPassword)
			require.Contains(t, buf.String(), tc.log)
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, b.Close())
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), sb.Password)
			require.NotContains(t, err.Error(), wrongPassword)
		})
	}
}

// writeTestPKI writes into dir a CA of its own (not the broker's) and a
// client certificate and key it signed, and returns their paths.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "oncely client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	return write("other-ca.pem", "CERTIFICATE", caDER), write("client.pem", "CERTIFICATE", leafDER), write("client.key", "PRIVATE KEY", keyDER)
}
