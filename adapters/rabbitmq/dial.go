package rabbitmq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/internal/redact"
)

// ErrLoginRefused is wrapped by a connection error when the broker refused
// the login: a wrong user or password. RabbitMQ answers 403 ACCESS_REFUSED,
// or, to a client that does not ask for the reason (amqp091-go does not),
// closes the connection without a word after a delay (3 s on RabbitMQ 3.10).
// A broker that does not answer the login within HandshakeTimeout is
// reported without it: the login may be refused or the broker slow.
var ErrLoginRefused = errors.New("login refused")

// ErrVhostRefused is wrapped by a connection error when the broker accepted
// the login but refused the virtual host: it does not exist, the user has no
// permissions on it, or a connection limit is reached (the broker's reason
// follows).
var ErrVhostRefused = errors.New("vhost refused")

// Dial opens a connection the way a Source does, for tools that need one of
// their own: cfg's URL (with several hosts, the first that answers, in the
// order written), TLS, ConnectionName, Heartbeat, DialTimeout and
// HandshakeTimeout (zero fields mean their defaults; Queue and Consumer are
// not used). Both timeouts are capped by ctx's deadline. Errors name the
// broker without its password and tell a refused login (ErrLoginRefused)
// and a refused vhost (ErrVhostRefused) from a broker that does not answer.
func Dial(ctx context.Context, cfg Config) (*amqp.Connection, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateConnection(); err != nil {
		return nil, fmt.Errorf("rabbitmq: invalid config: %w", err)
	}
	var hosts hostRing
	conn, err := hosts.dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	return conn, nil
}

// dial opens a connection with the configured name, heartbeat and TLS.
// DialTimeout bounds the TCP connect; HandshakeTimeout bounds what follows
// (TLS, the AMQP handshake, the login and the vhost), so a refused login
// that the broker answers by going silent is reported within seconds.
func dial(ctx context.Context, cfg Config) (*amqp.Connection, error) {
	connect, handshake := cfg.DialTimeout, cfg.HandshakeTimeout
	if d, ok := ctx.Deadline(); ok {
		connect, handshake = min(connect, time.Until(d)), min(handshake, time.Until(d))
	}
	var (
		watched    *watchedConn
		connectErr error
	)
	acfg := amqp.Config{
		Heartbeat:  cfg.Heartbeat,
		Locale:     "en_US",
		Properties: amqp.Table{"connection_name": cfg.ConnectionName},
		// DialConfig calls Dial synchronously, before the handshake.
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: connect}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				connectErr = err
				return nil, err
			}
			if err := c.SetDeadline(time.Now().Add(handshake)); err != nil {
				_ = c.Close()
				connectErr = err
				return nil, err
			}
			watched = &watchedConn{Conn: c}
			return watched, nil
		},
	}
	if cfg.TLS != nil {
		acfg.TLSClientConfig = cfg.TLS.Clone() // DialConfig fills in ServerName
	}
	conn, err := amqp.DialConfig(cfg.URL, acfg)
	if err == nil {
		return conn, nil
	}
	var readErr error
	if watched != nil {
		readErr = watched.readErr()
	}
	return nil, dialError(cfg.URL, handshake, connectErr, readErr, err)
}

// dialError explains a failed dial. amqp091-go reports a connection closed
// or timed out at the login step as amqp.ErrCredentials and at the vhost
// step as amqp.ErrVhost, whatever happened; readErr, what the socket said,
// tells a refusal (closed) from a broker that did not answer (timeout).
func dialError(rawURL string, handshake time.Duration, connectErr, readErr, err error) error {
	where := redact.URL(rawURL)
	user, vhost := "guest", "/"
	if u, perr := amqp.ParseURI(rawURL); perr == nil {
		user, vhost = u.Username, u.Vhost
	}
	var timedOut bool
	var ne net.Error
	if errors.As(readErr, &ne) && ne.Timeout() {
		timedOut = true
	}
	var ae *amqp.Error
	server := errors.As(err, &ae) && ae.Server
	var (
		unknownCA    x509.UnknownAuthorityError
		wrongHost    x509.HostnameError
		invalidCert  x509.CertificateInvalidError
		notTLS       tls.RecordHeaderError
		alert        tls.AlertError
		verification *tls.CertificateVerificationError
	)
	switch {
	case connectErr != nil:
		return fmt.Errorf("connecting to %s: %w", where, err)
	case errors.Is(err, amqp.ErrCredentials) && timedOut:
		return fmt.Errorf("RabbitMQ at %s: login refused for user %q, or the broker did not answer the login within %s (check the URL's user and password, and the broker's load): %w",
			where, user, handshake, readErr)
	case errors.Is(err, amqp.ErrCredentials) || server && ae.Code == amqp.AccessRefused:
		return fmt.Errorf("RabbitMQ at %s: %w for user %q (check the URL's user and password): %w", where, ErrLoginRefused, user, err)
	case errors.Is(err, amqp.ErrVhost) && timedOut:
		return fmt.Errorf("RabbitMQ at %s: the broker did not answer opening vhost %q within %s: %w", where, vhost, handshake, readErr)
	case errors.Is(err, amqp.ErrVhost) || server && ae.Code == amqp.NotAllowed:
		return fmt.Errorf("RabbitMQ at %s: %w: user %q may not open vhost %q (the vhost must exist and the user needs permissions on it): %w", where, ErrVhostRefused, user, vhost, err)
	case errors.As(err, &unknownCA) || errors.As(err, &wrongHost) || errors.As(err, &invalidCert) || errors.As(err, &verification):
		return fmt.Errorf("RabbitMQ at %s: TLS: the broker's certificate is not trusted (check the CA and the server name): %w", where, err)
	case errors.As(err, &notTLS):
		return fmt.Errorf("RabbitMQ at %s: TLS: the port does not speak TLS (amqps:// needs the broker's TLS listener, usually 5671): %w", where, err)
	case errors.As(err, &alert):
		return fmt.Errorf("RabbitMQ at %s: TLS: the broker refused the handshake (a client certificate it wants or does not trust?): %w", where, err)
	case timedOut:
		return fmt.Errorf("RabbitMQ at %s accepted the TCP connection but did not answer the handshake within %s (an AMQP port? amqps:// needs a TLS one): %w", where, handshake, readErr)
	case errors.As(err, &ae) && !server && ae.Code == amqp.FrameError:
		return fmt.Errorf("RabbitMQ at %s: the answer is not AMQP (a TLS port? write amqps:// for it): %w", where, err)
	}
	return fmt.Errorf("connecting to %s: %w", where, err)
}

// watchedConn records the first read error of a connection, which
// amqp091-go does not report for a handshake.
type watchedConn struct {
	net.Conn
	mu  sync.Mutex
	err error
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *watchedConn) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
