package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/consumer"
)

// openNATS opens nats://host:port[,host:port] (tls:// for TLS) with
// adapters/nats. The source is the subject producers publish to, held by
// the stream nats.StreamName(source); retried copies go to the stream of
// "<source>.<consumer>.retry", dead letters to the stream of
// "<source>.<consumer>.dlq". Query parameters:
//
//	start=earliest|latest|TIME
//	                    where the source stream's durable consumer starts when it does not
//	                    exist yet (nats.Config.Start; default earliest; TIME is RFC 3339)
//	prefetch=N          messages the Source holds ahead of the runtime over its two pull
//	                    subscriptions, source and retries (default 128, at least 4; the
//	                    consumer's MaxInFlight must be at least this)
//	ack_wait=30s        the consumer's lease, renewed with in-progress acks while a handler runs
//	max_deliver=N       the delivery on which the Source dead-letters a message instead
//	                    of handing it out (default 100); enforced by the Source, the
//	                    server has no limit, so a message is never dropped at it
//	max_ack_pending=N   unacknowledged messages the server hands out from the source
//	                    stream (default 1000; the retry stream has no limit)
//	poll_wait=1s        how long one pull request waits, at least 1s (Close waits this long)
//	max_message_size=N  the largest retry or dead-letter copy in bytes (default: the server's
//	                    max_payload); larger copies are trimmed to fit
//	key_header=NAME     header carrying the ordering key (default message-key)
//	replicas=N          replica count of the streams oncely creates: source, retry and
//	                    dead-letter (default 1); existing streams keep theirs
//	tls_ca, tls_cert, tls_key, tls_server_name, tls_insecure_skip_verify
//	                    TLS for tls:// (see queryTLS)
//
// User info in the URL (user:pass@) is passed to the server as credentials.
// Backlog reads consumer and stream info; dead letters are read by stream
// sequence and removed with a message delete, so listing them changes
// nothing.
func openNATS(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	cfg := nats.Config{Logger: o.logger}
	intParam := func(name string, dst *int) {
		if v := q.str(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				q.fail("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	durParam := func(name string, dst *time.Duration) {
		if v := q.str(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				q.fail("%s=%q: want a positive duration such as 30s", name, v)
			}
			*dst = d
		}
	}
	intParam("prefetch", &cfg.Prefetch)
	intParam("max_deliver", &cfg.MaxDeliver)
	intParam("max_ack_pending", &cfg.MaxAckPending)
	intParam("max_message_size", &cfg.MaxMessageSize)
	intParam("replicas", &cfg.Replicas)
	durParam("ack_wait", &cfg.AckWait)
	durParam("poll_wait", &cfg.PollWait)
	cfg.KeyHeader = q.str("key_header")
	cfg.Start = startParam(q)
	if cfg.TLS = queryTLS(q); cfg.TLS != nil && u.Scheme != "tls" {
		q.fail("tls_* parameters configure TLS, which needs tls://")
	}
	if u.Host == "" {
		q.fail("no host; write nats://host:port")
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	plain := *u
	plain.RawQuery = ""
	cfg.URL = plain.String()
	var hosts []string
	for _, h := range strings.Split(u.Host, ",") {
		c := plain
		c.Host = h
		hosts = append(hosts, c.String())
	}
	cfg.URL = strings.Join(hosts, ",")
	nc, err := nats.Connect(ctx, cfg.URL, cfg.TLS, "oncely tools")
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsBroker{cfg: cfg, nc: nc, js: js, pub: nats.NewPublisher(js, cfg.KeyHeader).WithReplicas(cfg.Replicas)}, nil
}

type natsBroker struct {
	cfg nats.Config
	nc  *natsgo.Conn
	js  jetstream.JetStream
	pub *nats.Publisher
}

func (n *natsBroker) Kind() string { return "nats" }

func (n *natsBroker) Source(ctx context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	cfg := n.cfg
	cfg.Source, cfg.Consumer = source, consumerName
	return nats.New(ctx, cfg)
}

func (n *natsBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return n.pub.Publish(ctx, source, msgs...)
}

func (n *natsBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	if err := n.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	if err := checkConsumer(ctx, n, source, consumerName); err != nil {
		return nil, err
	}
	return nats.Backlog(ctx, n.js, source, consumerName)
}

// sourceExists is nil when the source's stream exists, ErrNoSource when not.
func (n *natsBroker) sourceExists(ctx context.Context, source string) error {
	_, err := n.js.Stream(ctx, nats.StreamName(source))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return noSource("nats stream", source)
	}
	if err != nil {
		return fmt.Errorf("nats: looking up the stream of %s: %w", source, err)
	}
	return nil
}

func (n *natsBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	s, err := n.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, s, limit)
}

func (n *natsBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	s, err := n.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, s, func(ctx context.Context, msgs ...*consumer.Message) error { return n.pub.Publish(ctx, source, msgs...) }, opts)
}

func (n *natsBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	s, err := n.session(ctx, source, consumerName)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, s, opts)
}

func (n *natsBroker) Close() error {
	err := n.nc.FlushTimeout(5 * time.Second)
	n.nc.Close()
	if err != nil {
		return fmt.Errorf("nats: flushing: %w", err)
	}
	return nil
}

// natsSession reads a dead-letter stream by sequence (a snapshot of the
// sequences it held when opened); removing deletes that sequence.
type natsSession struct{ d *nats.DeadLetters }

func (n *natsBroker) session(ctx context.Context, source, consumerName string) (*natsSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	if err := n.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	if err := checkConsumer(ctx, n, source, consumerName); err != nil {
		return nil, err
	}
	d, err := nats.OpenDeadLetters(ctx, n.js, source, consumerName, n.cfg.KeyHeader)
	if err != nil {
		return nil, err
	}
	return &natsSession{d: d}, nil
}

func (s *natsSession) total() int { return s.d.Total() }

func (s *natsSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	ls, err := s.d.Next(ctx, n)
	out := make([]heldLetter, 0, len(ls))
	for _, l := range ls {
		seq := l.Seq
		out = append(out, heldLetter{msg: l.Message, remove: func(ctx context.Context) error { return s.d.Remove(ctx, seq) }})
	}
	return out, err
}

func (s *natsSession) close(context.Context) error { return nil }
