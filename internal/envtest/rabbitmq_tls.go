package envtest

import (
	"errors"
	"os"
	"testing"
)

// RabbitMQTLS returns RABBITMQ_TLS_URL, the broker's amqps:// listener, and
// RABBITMQ_TLS_CA, the PEM file of the test CA that signed its certificate
// (scripts/rabbitmq-tls.sh makes both; scripts/test.sh exports them), after
// checking the listener accepts TCP connections and the file is readable.
// There is no default: an unset variable counts as a missing service.
func RabbitMQTLS(t testing.TB) (url, caFile string) {
	t.Helper()
	const service = "RabbitMQ's TLS listener"
	caFile = os.Getenv("RABBITMQ_TLS_CA")
	switch {
	case os.Getenv("RABBITMQ_TLS_URL") == "":
		Missing(t, service, errors.New("RABBITMQ_TLS_URL is not set"))
		return "", ""
	case caFile == "":
		Missing(t, service, errors.New("RABBITMQ_TLS_CA is not set"))
		return "", ""
	}
	if _, err := os.Stat(caFile); err != nil {
		Missing(t, service, err)
		return "", ""
	}
	return require(t, service, "RABBITMQ_TLS_URL", ""), caFile
}
