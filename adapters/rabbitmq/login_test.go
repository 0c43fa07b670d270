package rabbitmq

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// withUserinfo returns the test broker's URL with user and password (and
// vhost, when not empty) replaced.
func withUserinfo(t *testing.T, user, pass, vhost string) string {
	t.Helper()
	u, err := url.Parse(envtest.RabbitMQ(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pass)
	if vhost != "" {
		u.Path = "/" + vhost
	}
	return u.String()
}

// TestWrongPasswordReported opens a Source, a Publisher and a tools
// connection with a wrong password. Catches: a refused login reported as a
// broker that does not answer (or as an i/o timeout after the 15 s dial
// timeout), the password in the error, and a Publisher retrying a refused
// login until its context ends.
func TestWrongPasswordReported(t *testing.T) {
	const secret = "wrong-s3cret-pw"
	raw := withUserinfo(t, "guest", secret, "")
	check := func(what string, start time.Time, err error) {
		t.Helper()
		if took := time.Since(start); took > 6*time.Second {
			t.Errorf("%s: reported after %s, want < 6s", what, took)
		}
		if !errors.Is(err, ErrLoginRefused) {
			t.Fatalf("%s: want ErrLoginRefused, got %v", what, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, `login refused for user "guest" (check the URL's user and password)`) {
			t.Errorf("%s: error does not explain the login: %s", what, msg)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("%s: error shows the password: %s", what, msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	_, err := New(ctx, Config{URL: raw, Queue: uniqueName("login"), Consumer: "ledger", Logger: testLogger()})
	check("New", start, err)

	pub, err := NewPublisher(PublisherConfig{URL: raw, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	start = time.Now()
	err = pub.Publish(ctx, uniqueName("login"), &consumer.Message{ID: "1", Body: []byte("x")})
	check("Publish", start, err)

	start = time.Now()
	_, err = Dial(ctx, Config{URL: raw})
	check("Dial", start, err)

	conn, err := Dial(ctx, Config{URL: envtest.RabbitMQ(t)})
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	_ = conn.Close()
}

// TestUnknownVhostReported dials a vhost that does not exist. Catches: a
// refused vhost reported as an unreachable broker or as a login failure.
func TestUnknownVhostReported(t *testing.T) {
	raw := withUserinfo(t, "guest", "guest", "oncely-no-such-vhost")
	_, err := Dial(context.Background(), Config{URL: raw})
	if !errors.Is(err, ErrVhostRefused) || errors.Is(err, ErrLoginRefused) {
		t.Fatalf("want ErrVhostRefused, got %v", err)
	}
	if !strings.Contains(err.Error(), `user "guest" may not open vhost "oncely-no-such-vhost"`) {
		t.Errorf("error does not name the vhost: %v", err)
	}
}

// TestSilentBrokerBoundedByHandshakeTimeout dials a port that accepts TCP
// connections and never answers. Catches: the handshake bounded only by
// DialTimeout (15 s), and a silent peer reported as refused credentials.
func TestSilentBrokerBoundedByHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	start := time.Now()
	_, err = Dial(context.Background(), Config{URL: "amqp://guest:guest@" + ln.Addr().String() + "/", HandshakeTimeout: time.Second})
	took := time.Since(start)
	_ = ln.Close()
	for c := range accepted {
		_ = c.Close()
	}
	if took > 3*time.Second {
		t.Errorf("took %s with a 1s HandshakeTimeout", took)
	}
	if err == nil || errors.Is(err, ErrLoginRefused) || !errors.Is(err, os.ErrDeadlineExceeded) ||
		!strings.Contains(err.Error(), "did not answer the handshake within 1s") {
		t.Fatalf("want a handshake timeout, got %v", err)
	}
}

// TestUnansweredLoginSaysSo dials the real broker through a relay that
// passes the AMQP protocol header and then nothing more from the client:
// the broker sends connection.start and never sees the login. Catches: a
// broker that does not answer the login reported as a certain refusal
// (amqp091-go says ErrCredentials for any failure at that step), and the
// login not bounded by HandshakeTimeout.
func TestUnansweredLoginSaysSo(t *testing.T) {
	target, err := url.Parse(envtest.RabbitMQ(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		client, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = client.Close() }()
		server, err := net.Dial("tcp", target.Host)
		if err != nil {
			return
		}
		defer func() { _ = server.Close() }()
		if _, err := io.CopyN(server, client, 8); err != nil { // "AMQP\x00\x00\x09\x01"
			return
		}
		go func() { // the login goes nowhere; the client's close ends the relay
			_, _ = io.Copy(io.Discard, client)
			_ = server.Close()
		}()
		_, _ = io.Copy(client, server)
	}()
	raw := withUserinfo(t, "guest", "guest", "")
	u, _ := url.Parse(raw)
	u.Host = ln.Addr().String()
	start := time.Now()
	_, err = Dial(context.Background(), Config{URL: u.String(), HandshakeTimeout: time.Second})
	took := time.Since(start)
	_ = ln.Close()
	<-relayed
	if took > 3*time.Second {
		t.Errorf("took %s with a 1s HandshakeTimeout", took)
	}
	if err == nil || errors.Is(err, ErrLoginRefused) ||
		!strings.Contains(err.Error(), `login refused for user "guest", or the broker did not answer the login within 1s`) {
		t.Fatalf("want an unanswered login, got %v", err)
	}
}
