package adapters

import (
	"crypto/tls"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kafkaSecurity reads the TLS and SASL settings of a kafka:// or kafkas://
// URL (see openKafka) into franz-go options, reporting bad ones on q. The
// password is read from u's user info and never put into an error or a log.
func kafkaSecurity(u *url.URL, q *query, log *slog.Logger) []kgo.Opt {
	var opts []kgo.Opt
	tlsOn := strings.EqualFold(u.Scheme, "kafkas")
	if v := q.str("tls"); v != "" {
		b, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			q.fail("tls=%q: want true or false", v)
		case tlsOn && !b:
			q.fail("tls=false contradicts kafkas://, which is TLS")
		default:
			tlsOn = b
		}
	}
	if c := kafkaTLS(q, tlsOn); c != nil {
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	m := kafkaSASL(u, q)
	if m != nil {
		opts = append(opts, kgo.SASL(m))
		if m.Name() == "PLAIN" && !tlsOn {
			log.Warn("kafka: SASL PLAIN without TLS sends the password unencrypted; use kafkas:// or sasl=scram-sha-512")
		}
	}
	return opts
}

// kafkaTLS returns the TLS configuration of the tls_* parameters (queryTLS;
// with none, TLS 1.2 or later against the system's roots, each broker
// verified against its own host), or nil when TLS is off (then every tls_*
// parameter is refused).
func kafkaTLS(q *query, on bool) *tls.Config {
	if !on {
		for _, p := range []string{"tls_ca", "tls_cert", "tls_key", "tls_server_name", "tls_insecure_skip_verify"} {
			if q.str(p) != "" {
				q.fail("%s needs TLS: write kafkas:// or add tls=true", p)
			}
		}
		return nil
	}
	if c := queryTLS(q); c != nil {
		return c
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// kafkaSASL returns the SASL mechanism of u's user info and the sasl
// parameter (default SCRAM-SHA-512), or nil without user info.
func kafkaSASL(u *url.URL, q *query) sasl.Mechanism {
	mech := strings.ToLower(q.str("sasl"))
	if u.User == nil {
		if mech != "" {
			q.fail("sasl=%s needs a user and a password: write %s://USER:PASSWORD@host:port", mech, u.Scheme)
		}
		return nil
	}
	user := u.User.Username()
	pass, _ := u.User.Password()
	if user == "" || pass == "" {
		q.fail("SASL needs a user and a password: write %s://USER:PASSWORD@host:port (percent-encode reserved characters)", u.Scheme)
		return nil
	}
	switch mech {
	case "", "scram-sha-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	case "scram-sha-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "plain":
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	}
	q.fail("sasl=%q: want plain, scram-sha-256 or scram-sha-512", mech)
	return nil
}
