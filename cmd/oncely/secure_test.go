package main

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/kafkatest"
)

// TestDLQAndLagKafkaSecure drives the dlq and lag commands over the suite
// Kafka's SASL_SSL listener with a kafkas:// URL, and a wrong password
// through --broker. Catches: the CLI opening brokers some other way than
// adapters.Open (a secure URL refused or its options lost on one of the
// commands' connections), and a password echoed on stderr.
func TestDLQAndLagKafkaSecure(t *testing.T) {
	sb := kafkatest.Secure(t)
	q := url.Values{"tls_ca": {sb.CA}, "sasl": {"scram-sha-256"}, "tiers": {"100ms"}, "partitions": {"2"}}
	u := url.URL{Scheme: "kafkas", User: url.UserPassword(sb.User, sb.Password), Host: sb.Addr, RawQuery: q.Encode()}
	testDLQ(t, u.String(), nil)

	const wrong = "not-the-Pa55word"
	u.User = url.UserPassword(sb.User, wrong)
	code, out, errs := cli(t, nil, nil, "lag", "--broker", u.String(), "--source", "s", "--consumer", "c")
	require.Equal(t, 1, code, out)
	require.Contains(t, errs, "SASL mechanism SCRAM-SHA-256")
	require.NotContains(t, errs+out, wrong)
}
