package kafkatest

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/oncely/oncely/internal/envtest"
)

// The variables naming the SASL_SSL listener scripts/kafka.sh opens besides
// the plaintext one.
const (
	SASLBrokersEnv  = "KAFKA_SASL_BROKERS"  // host:port of the SASL_SSL listener
	TLSCAEnv        = "KAFKA_TLS_CA"        // PEM file of the CA that signed its certificate
	SASLUserEnv     = "KAFKA_SASL_USER"     // user known to PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
	SASLPasswordEnv = "KAFKA_SASL_PASSWORD" // that user's password
)

// SecureBroker is the suite's SASL_SSL listener.
type SecureBroker struct {
	Addr     string // host:port
	CA       string // path of the CA's PEM file
	User     string
	Password string
}

// Secure returns the SASL_SSL listener once it accepts TCP connections.
// Under CI=true an unset variable or an unreachable listener fails t
// (envtest.Missing); elsewhere it skips t (kfake has no TLS).
func Secure(t testing.TB) SecureBroker {
	t.Helper()
	b := SecureBroker{Addr: os.Getenv(SASLBrokersEnv), CA: os.Getenv(TLSCAEnv),
		User: os.Getenv(SASLUserEnv), Password: os.Getenv(SASLPasswordEnv)}
	for env, v := range map[string]string{SASLBrokersEnv: b.Addr, TLSCAEnv: b.CA, SASLUserEnv: b.User, SASLPasswordEnv: b.Password} {
		if v == "" {
			envtest.Missing(t, "Kafka's SASL_SSL listener", errors.New(env+" is not set"))
			return SecureBroker{}
		}
	}
	conn, err := net.DialTimeout("tcp", b.Addr, 2*time.Second)
	if err != nil {
		envtest.Missing(t, "Kafka's SASL_SSL listener at "+SASLBrokersEnv+"="+b.Addr, err)
		return SecureBroker{}
	}
	_ = conn.Close()
	return b
}
