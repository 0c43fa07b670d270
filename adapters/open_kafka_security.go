package adapters

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/url"
	"os"
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

// kafkaTLS returns the TLS configuration of the tls_* parameters, or nil
// when TLS is off (then every tls_* parameter is refused).
func kafkaTLS(q *query, on bool) *tls.Config {
	ca, cert, key := q.str("tls_ca"), q.str("tls_cert"), q.str("tls_key")
	name, skip := q.str("tls_server_name"), q.str("tls_insecure_skip_verify")
	if !on {
		for p, v := range map[string]string{"tls_ca": ca, "tls_cert": cert, "tls_key": key, "tls_server_name": name, "tls_insecure_skip_verify": skip} {
			if v != "" {
				q.fail("%s needs TLS: write kafkas:// or add tls=true", p)
			}
		}
		return nil
	}
	// ServerName empty: franz-go verifies each broker against its own host.
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			q.fail("tls_ca: reading the CA file: %w", err)
		} else {
			c.RootCAs = x509.NewCertPool()
			if !c.RootCAs.AppendCertsFromPEM(pem) {
				q.fail("tls_ca=%q: no PEM certificate in the file", ca)
			}
		}
	}
	switch {
	case cert != "" && key != "":
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			q.fail("tls_cert=%q, tls_key=%q: loading the client certificate: %w", cert, key, err)
		}
		c.Certificates = []tls.Certificate{kp}
	case cert != "":
		q.fail("tls_cert without tls_key: a client certificate needs both")
	case key != "":
		q.fail("tls_key without tls_cert: a client certificate needs both")
	}
	if skip != "" {
		b, err := strconv.ParseBool(skip)
		if err != nil {
			q.fail("tls_insecure_skip_verify=%q: want true or false", skip)
		}
		c.InsecureSkipVerify = b
	}
	return c
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
