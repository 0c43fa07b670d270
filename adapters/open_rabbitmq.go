package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// openRabbitMQ opens amqp://user:pass@host:port/vhost (amqps:// for TLS)
// with adapters/rabbitmq. A cluster's nodes are listed comma-separated,
// amqp://user:pass@h1:5672,h2:5673,h3:5674/vhost: each connection dials
// them in turn, starting after the node of its last connection, so a
// connection lost with its node reconnects to another (rabbitmq.Config.URL).
// The source is the queue; retry queues are
// "<source>.<consumer>.retry.<tier>" and the dead-letter queue
// "<source>.<consumer>.dlq" (rabbitmq.RetryQueue, rabbitmq.DeadLetterQueue:
// a consumer name with '.' is escaped). Query parameters:
//
//	queue_type=quorum|classic  type of the queues declared (default quorum)
//	prefetch=N                 per-consumer prefetch (default 128, the runtime's default MaxInFlight;
//	                           the consumer's MaxInFlight must be at least this; 0, which AMQP reads
//	                           as unbounded, is refused)
//	delivery_limit=N           quorum x-delivery-limit of the source queue (default 100; the broker
//	                           counts clean closes too, so it guards against crash loops only)
//	max_message_size=N         the broker's max_message_size in bytes (default 128 MiB): retry and
//	                           dead-letter copies are trimmed to fit it before they are published
//	tiers=1s,10s,1m            retry queue delays (default 1s,10s,1m,10m,1h); only those
//	                           the consumer's retry policy reaches are declared
//	key_header=NAME            header carrying the ordering key (default message-key)
//	tls_ca, tls_cert, tls_key, tls_server_name, tls_insecure_skip_verify
//	                           TLS for amqps:// (see queryTLS); without them the system's roots
//	                           and the URL's host as server name
//
// Every connection (Source sessions, the Publisher, the tools connection)
// uses the same TLS settings. The TCP connect is bounded by 15 s and the
// rest of opening a connection (TLS, login, vhost) by 5 s; a refused login
// or vhost is reported as such (rabbitmq.ErrLoginRefused,
// rabbitmq.ErrVhostRefused), with the user and vhost and never the password.
//
// Backlog counts ready messages (a passive declare cannot count messages
// other connections hold unacknowledged). Dead letters are browsed with
// basic.get and handed back by closing the channel, so browsing marks them
// redelivered and, on quorum queues, counts a delivery (the dead-letter
// queue's delivery limit is set high for this).
func openRabbitMQ(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	cfg := rabbitmq.Config{Logger: o.logger}
	switch v := q.str("queue_type"); v {
	case "":
	case "quorum":
		cfg.QueueType = rabbitmq.Quorum
	case "classic":
		cfg.QueueType = rabbitmq.Classic
	default:
		q.fail("queue_type=%q: want quorum or classic", v)
	}
	intParam := func(name string, dst *int) {
		if v := q.str(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				q.fail("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	if q.str("prefetch") == "0" {
		q.fail("prefetch=0: AMQP reads 0 as unbounded prefetch, which lets one consumer take the whole queue and makes a crash count against every message it held; leave it out for the default (%d) or give a bound", rabbitmq.PrefetchDefault)
	} else {
		intParam("prefetch", &cfg.Prefetch)
	}
	intParam("delivery_limit", &cfg.DeliveryLimit)
	intParam("max_message_size", &cfg.MaxMessageSize)
	if v := q.str("tiers"); v != "" {
		t, err := parseTiers(v)
		if err != nil {
			q.fail("tiers=%q: %v", v, err)
		}
		cfg.Tiers = t
	}
	cfg.KeyHeader = q.str("key_header")
	if cfg.TLS = queryTLS(q); cfg.TLS != nil && u.Scheme != "amqps" {
		q.fail("tls_* parameters configure TLS, which needs amqps:// (the broker's TLS port, usually 5671)")
	}
	if u.Host == "" {
		q.fail("no host; write amqp://user:pass@host:port/vhost")
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	plain := *u
	plain.RawQuery = ""
	cfg.URL = plain.String()
	pub, err := rabbitmq.NewPublisher(rabbitmq.PublisherConfig{URL: cfg.URL, TLS: cfg.TLS, QueueType: cfg.QueueType, DeliveryLimit: cfg.DeliveryLimit,
		KeyHeader: cfg.KeyHeader, Logger: o.logger})
	if err != nil {
		return nil, err
	}
	b := &rabbitBroker{cfg: cfg, pub: pub}
	if _, err := b.connection(ctx); err != nil {
		_ = pub.Close()
		return nil, err
	}
	return b, nil
}

type rabbitBroker struct {
	cfg rabbitmq.Config
	pub *rabbitmq.Publisher

	mu   sync.Mutex
	conn *amqp.Connection
}

func (r *rabbitBroker) Kind() string { return "rabbitmq" }

// connection returns the tool connection (DLQ browsing, depths), dialling
// it when absent or closed.
func (r *rabbitBroker) connection(ctx context.Context) (*amqp.Connection, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil && !r.conn.IsClosed() {
		return r.conn, nil
	}
	conn, err := rabbitmq.Dial(ctx, rabbitmq.Config{URL: r.cfg.URL, TLS: r.cfg.TLS, ConnectionName: "oncely tools", Logger: r.cfg.Logger})
	if err != nil {
		return nil, err
	}
	r.conn = conn
	return conn, nil
}

func (r *rabbitBroker) Source(ctx context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	cfg := r.cfg
	cfg.Queue, cfg.Consumer = source, consumerName
	return rabbitmq.New(ctx, cfg)
}

func (r *rabbitBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return r.pub.Publish(ctx, source, msgs...)
}

func (r *rabbitBroker) dlq(source, consumerName string) string {
	return rabbitmq.DeadLetterQueue(source, consumerName)
}

func (r *rabbitBroker) tiers() retry.Tiers {
	if r.cfg.Tiers != nil {
		return r.cfg.Tiers
	}
	return retry.DefaultTiers
}

// depth returns the ready messages of queue, or -1 when it does not exist.
func (r *rabbitBroker) depth(ctx context.Context, queue string) (int64, error) {
	conn, err := r.connection(ctx)
	if err != nil {
		return 0, err
	}
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer func() { _ = ch.Close() }()
	st, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("rabbitmq: inspecting queue %s: %w", queue, err)
	}
	return int64(st.Messages), nil
}

func (r *rabbitBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	lag, err := r.depth(ctx, source)
	if err != nil {
		return nil, err
	}
	if lag < 0 {
		return nil, noSource("rabbitmq queue", source)
	}
	if err := checkConsumer(ctx, r, source, consumerName); err != nil {
		return nil, err
	}
	dead, err := r.depth(ctx, r.dlq(source, consumerName))
	if err != nil {
		return nil, err
	}
	out := []consumer.Backlog{{Source: source, Partition: -1, Lag: lag, DeadLetters: max(dead, 0)}}
	for _, t := range r.tiers() {
		name := rabbitmq.RetryQueue(source, consumerName, t)
		n, err := r.depth(ctx, name)
		if err != nil {
			return nil, err
		}
		if n >= 0 {
			out = append(out, consumer.Backlog{Source: name, Partition: -1, Lag: n, DeadLetters: -1})
		}
	}
	return out, nil
}

func (r *rabbitBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	s, err := r.session(ctx, source, consumerName, 1)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, s, limit)
}

func (r *rabbitBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	s, err := r.session(ctx, source, consumerName, rabbitGetters)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, s, func(ctx context.Context, msgs ...*consumer.Message) error { return r.pub.Publish(ctx, source, msgs...) }, opts)
}

func (r *rabbitBroker) Close() error {
	err := r.pub.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil && !r.conn.IsClosed() {
		err = errors.Join(err, r.conn.Close())
	}
	return err
}

// rabbitSession browses a dead-letter queue with basic.get on channels of
// its own; acks remove, closing the channels hands the rest back.
//
// It reads with rabbitGetters channels at once: one basic.get is a round
// trip, and with one channel BenchmarkRedriveRate's redrive took 10.05–31.13
// s (the 12,000 gets 7.5 s of a 10 s run), with four 10.02–10.04 s. A consumer cannot
// replace the gets: a quorum queue stops delivering once its prefetch
// window of held, unacked letters is full, and a redrive holds the letters
// its filter skips until it ends.
type rabbitSession struct {
	r         *rabbitBroker
	chs       []*amqp.Channel // none when the queue does not exist
	removed   int
	queue     string
	keyHeader string
	count     int

	mu    sync.Mutex
	got   int  // gets started, bounded by count
	empty bool // a get found the queue empty
}

// rabbitGetters is the number of channels Redrive and Purge read a
// dead-letter queue with (docs/benchmarks-log.md, "Dead-letter redrive (issue
// 21)"); their order across channels is not the queue's.
const rabbitGetters = 4

// session opens a browse of the dead-letter queue with getters channels:
// one keeps the queue's order (DeadLetters lists in it).
func (r *rabbitBroker) session(ctx context.Context, source, consumerName string, getters int) (*rabbitSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	n, err := r.depth(ctx, source)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, noSource("rabbitmq queue", source)
	}
	if err := checkConsumer(ctx, r, source, consumerName); err != nil {
		return nil, err
	}
	s := &rabbitSession{r: r, queue: r.dlq(source, consumerName), keyHeader: r.cfg.KeyHeader}
	if s.keyHeader == "" {
		s.keyHeader = rabbitmq.KeyHeaderDefault
	}
	n, err = r.depth(ctx, s.queue)
	if err != nil || n <= 0 {
		return s, err
	}
	conn, err := r.connection(ctx)
	if err != nil {
		return nil, err
	}
	for range min(getters, int(n)) {
		ch, err := conn.Channel()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("rabbitmq: opening a channel: %w", err), s.closeChannels())
		}
		s.chs = append(s.chs, ch)
	}
	s.count = int(n)
	return s, nil
}

func (s *rabbitSession) total() int { return s.count }

// next gets up to n messages, never more than the queue held at the start
// (so a consumer dead-lettering meanwhile cannot keep a redrive going).
func (s *rabbitSession) next(_ context.Context, n int) ([]heldLetter, error) {
	var (
		out      []heldLetter
		inflight int
		errs     []error
		wg       sync.WaitGroup
	)
	for _, ch := range s.chs {
		wg.Go(func() {
			for {
				s.mu.Lock()
				if len(out)+inflight >= n || s.got >= s.count || s.empty || len(errs) > 0 {
					s.mu.Unlock()
					return
				}
				s.got++
				inflight++
				s.mu.Unlock()
				d, ok, err := ch.Get(s.queue, false)
				s.mu.Lock()
				inflight--
				switch {
				case err != nil:
					s.got--
					errs = append(errs, fmt.Errorf("rabbitmq: reading %s: %w", s.queue, err))
				case !ok:
					s.got--
					s.empty = true
				default:
					tag := d.DeliveryTag
					out = append(out, heldLetter{msg: rabbitmq.MessageFromDelivery(&d, s.keyHeader, d.RoutingKey), remove: func(context.Context) error {
						if err := ch.Ack(tag, false); err != nil {
							return err
						}
						s.removed++
						return nil
					}})
				}
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (s *rabbitSession) closeChannels() error {
	var errs []error
	for _, ch := range s.chs {
		errs = append(errs, ch.Close())
	}
	return errors.Join(errs...)
}

// close hands back the messages not removed and waits (up to 5s) until the
// queue shows them again, so the next browse sees them: the broker
// requeues a closed channel's messages asynchronously.
func (s *rabbitSession) close(ctx context.Context) error {
	if len(s.chs) == 0 {
		return nil
	}
	if err := s.closeChannels(); err != nil {
		return err
	}
	want := int64(s.count - s.removed)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := s.r.depth(ctx, s.queue)
		if err != nil || n >= want || time.Now().After(deadline) {
			return err
		}
		if err := sleepUntil(ctx, time.Now().Add(20*time.Millisecond)); err != nil {
			return err
		}
	}
}
