// Package envtest locates the services integration tests need. Under CI=true a
// missing service fails the test; elsewhere it skips, so `go test ./...` on a
// laptop without services still runs the unit tests.
package envtest

import (
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// Defaults for the local services the test script starts.
const (
	PostgresURLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	RabbitMQURLDefault = "amqp://guest:guest@127.0.0.1:5672/"
	SQSEndpointDefault = "http://127.0.0.1:9324"
	RedisURLDefault    = "redis://127.0.0.1:6379/0"
)

// CI reports whether the tests run under CI=true, where missing services fail.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing fails t under CI and skips it elsewhere, naming the service and how
// to start it.
func Missing(t testing.TB, service string, err error) {
	t.Helper()
	msg := service + " is not reachable (" + err.Error() + "); run ./scripts/test.sh, which starts it"
	if CI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Postgres returns TEST_DATABASE_URL (default PostgresURLDefault) after checking
// the server accepts TCP connections.
func Postgres(t testing.TB) string {
	t.Helper()
	return require(t, "PostgreSQL", "TEST_DATABASE_URL", PostgresURLDefault)
}

// RabbitMQ returns RABBITMQ_URL (default RabbitMQURLDefault) after checking the
// broker accepts TCP connections.
func RabbitMQ(t testing.TB) string {
	t.Helper()
	return require(t, "RabbitMQ", "RABBITMQ_URL", RabbitMQURLDefault)
}

// SQS returns SQS_ENDPOINT (default SQSEndpointDefault), the local SQS
// emulator, after checking it accepts TCP connections.
func SQS(t testing.TB) string {
	t.Helper()
	return require(t, "the SQS emulator", "SQS_ENDPOINT", SQSEndpointDefault)
}

// Redis returns REDIS_URL (default RedisURLDefault) after checking the
// server accepts TCP connections.
func Redis(t testing.TB) string {
	t.Helper()
	return require(t, "Redis", "REDIS_URL", RedisURLDefault)
}

func require(t testing.TB, service, env, def string) string {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s=%q is not a URL: %v", env, raw, err)
	}
	host := u.Host
	if u.Port() == "" {
		switch u.Scheme {
		case "postgres", "postgresql":
			host = net.JoinHostPort(u.Hostname(), "5432")
		case "amqp":
			host = net.JoinHostPort(u.Hostname(), "5672")
		case "amqps":
			host = net.JoinHostPort(u.Hostname(), "5671")
		case "redis", "rediss":
			host = net.JoinHostPort(u.Hostname(), "6379")
		case "http":
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	conn, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		Missing(t, service, err)
		return ""
	}
	_ = conn.Close()
	return raw
}
