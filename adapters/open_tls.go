package adapters

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"
)

// queryTLS reads a broker URL's TLS parameters and returns the *tls.Config
// they describe, or nil when none is given (the client's default: the
// system's roots, the URL's host as server name). Files are read once, here.
// Every broker's URL reads its TLS settings here (amqps://, kafkas://).
//
//	tls_ca=FILE                    PEM CA certificates the broker's certificate must chain to
//	                               (instead of the system's roots)
//	tls_cert=FILE&tls_key=FILE     a PEM client certificate and its key (both or neither), for
//	                               brokers that verify clients
//	tls_server_name=NAME           the name the broker's certificate must carry (default: the URL's host)
//	tls_insecure_skip_verify=true  accept any certificate: for tests only, anyone on the path
//	                               can then read and change the traffic
func queryTLS(q *query) *tls.Config {
	ca, cert, key, name, skip := q.str("tls_ca"), q.str("tls_cert"), q.str("tls_key"), q.str("tls_server_name"), q.str("tls_insecure_skip_verify")
	if ca == "" && cert == "" && key == "" && name == "" && skip == "" {
		return nil
	}
	c := &tls.Config{ServerName: name, MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		switch {
		case err != nil:
			q.fail("tls_ca=%q: reading the CA file: %w", ca, err)
		default:
			c.RootCAs = x509.NewCertPool()
			if !c.RootCAs.AppendCertsFromPEM(pem) {
				q.fail("tls_ca=%q: no PEM certificate in the file", ca)
			}
		}
	}
	switch {
	case cert != "" && key == "":
		q.fail("tls_cert without tls_key: a client certificate needs both files")
	case key != "" && cert == "":
		q.fail("tls_key without tls_cert: a client certificate needs both files")
	case cert != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			q.fail("tls_cert=%q, tls_key=%q: loading the client certificate: %w", cert, key, err)
		} else {
			c.Certificates = []tls.Certificate{pair}
		}
	}
	if skip != "" {
		v, err := strconv.ParseBool(skip)
		if err != nil {
			q.fail("tls_insecure_skip_verify=%q: want true or false", skip)
		}
		c.InsecureSkipVerify = v
	}
	return c
}
