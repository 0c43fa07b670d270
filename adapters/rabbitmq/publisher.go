package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// publishChunk is the most publishes awaiting confirmation at once.
const publishChunk = 1000

// PublisherConfig configures a Publisher. URL is required; every other zero
// field means the default of the Config field of the same name.
type PublisherConfig struct {
	// URL is the broker, amqp://user:pass@host:port/vhost (amqps:// for
	// TLS, configured by TLS as in Config).
	URL string
	TLS *tls.Config
	// QueueType and DeliveryLimit shape the source queues the Publisher
	// declares when absent; they must match the consumers' Config, whose
	// source queue arguments do not depend on the consumer name.
	QueueType     QueueType
	DeliveryLimit int
	// KeyHeader is the header that carries Message.Key.
	KeyHeader string
	// ConnectionName defaults to "oncely publisher".
	ConnectionName string
	// ReconnectBackoff spaces attempts after a failed or unconfirmed
	// publish.
	ReconnectBackoff retry.Policy
	// DialTimeout, HandshakeTimeout, RPCTimeout and Heartbeat bound the
	// connection.
	DialTimeout, HandshakeTimeout, RPCTimeout, Heartbeat time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Publisher publishes messages to queues with publisher confirms, for
// producers, tests and redrive tools. Publish returns only when the broker
// confirmed every message; publishes lost to a disconnect, nacked or
// returned unroutable are sent again after reconnecting, until ctx ends.
// So a message may be published twice, never reported done unconfirmed.
// Its methods are safe for concurrent use.
type Publisher struct {
	cfg Config
	log *slog.Logger
	src *Source // borrowed for rpc and its timeouts

	mu       sync.Mutex
	conn     *amqp.Connection
	ch       *amqp.Channel
	conf     *confirmer
	declared map[string]bool
	closed   bool
	hosts    hostRing
	wg       sync.WaitGroup
}

// NewPublisher validates cfg; it connects on the first Publish.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	c := Config{
		URL: cfg.URL, TLS: cfg.TLS, Queue: "publisher", Consumer: "publisher",
		QueueType: cfg.QueueType, DeliveryLimit: cfg.DeliveryLimit, KeyHeader: cfg.KeyHeader,
		ConnectionName: cfg.ConnectionName, ReconnectBackoff: cfg.ReconnectBackoff,
		DialTimeout: cfg.DialTimeout, HandshakeTimeout: cfg.HandshakeTimeout, RPCTimeout: cfg.RPCTimeout, Heartbeat: cfg.Heartbeat, Logger: cfg.Logger,
	}
	if c.ConnectionName == "" {
		c.ConnectionName = "oncely publisher"
	}
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Publisher{
		cfg:      c,
		log:      c.Logger.With("broker", "rabbitmq", "role", "publisher"),
		src:      &Source{cfg: c},
		declared: make(map[string]bool),
	}, nil
}

// Publish sends msgs to queue (through the default exchange) with each
// message's ID in the message_id property (in the message-id header when it
// is longer than the property's 255 bytes), its Key in the key header and
// its Headers as string headers, persistent. It declares queue as a source
// queue when absent (an existing queue is used as it is), and returns once
// every message is confirmed, or ctx's error with the count still
// unconfirmed. A refused login (ErrLoginRefused), vhost (ErrVhostRefused)
// or queue (ErrTopologyMismatch) is returned at once: trying again would
// not help.
func (p *Publisher) Publish(ctx context.Context, queue string, msgs ...*consumer.Message) error {
	pending := make([]outgoing, len(msgs))
	now := time.Now()
	for i, m := range msgs {
		h := publishHeaders(idHeader(m.ID, m.Headers))
		if m.Key != "" {
			h[p.cfg.KeyHeader] = m.Key
		}
		ts := m.Timestamp
		if ts.IsZero() {
			ts = now
		}
		pending[i] = outgoing{queue: queue, msg: amqp.Publishing{
			Headers: h, Body: m.Body, DeliveryMode: amqp.Persistent, Timestamp: ts,
		}}
		if len(m.ID) <= maxShortString {
			pending[i].msg.MessageId = m.ID
		}
	}
	var last error
	for try := 1; len(pending) > 0; try++ {
		conf, err := p.session(ctx, queue)
		if err == nil {
			var failed []outgoing
			for start := 0; start < len(pending); start += publishChunk {
				chunk := pending[start:min(start+publishChunk, len(pending))]
				for i, err := range conf.publish(ctx, chunk) {
					if err != nil {
						failed = append(failed, chunk[i])
						last = err
						if errors.Is(err, ErrUnroutable) {
							p.forget(queue)
						}
					}
				}
			}
			pending = failed
			if len(pending) == 0 {
				return nil
			}
			if errors.Is(last, ErrNotConfirmed) && ctx.Err() == nil {
				p.reopen(conf)
			}
		} else {
			last = err
			if errors.Is(err, ErrTopologyMismatch) || errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrVhostRefused) {
				return fmt.Errorf("rabbitmq: publish: %w", err)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("rabbitmq: publish: %d of %d messages not confirmed: %w", len(pending), len(msgs), errors.Join(last, ctx.Err()))
		}
		p.log.Warn("publishes not confirmed; publishing them again", "queue", queue, "count", len(pending), "error", last)
		t := time.NewTimer(p.cfg.ReconnectBackoff.Delay(try, nil))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return nil
}

// session returns a live confirmer, connecting and declaring queue first
// when needed.
func (p *Publisher) session(ctx context.Context, queue string) (*confirmer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("rabbitmq: publisher closed")
	}
	if p.ch == nil || p.ch.IsClosed() {
		p.dropLocked()
		conn, err := p.hosts.dial(ctx, p.cfg)
		if err != nil {
			return nil, err
		}
		connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
		p.wg.Go(func() {
			for range connClosed {
			}
		})
		blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
		p.wg.Go(func() {
			for b := range blocked {
				p.log.Warn("broker blocked the connection", "active", b.Active, "reason", b.Reason)
			}
		})
		var ch *amqp.Channel
		err = p.src.rpc(ctx, conn, "opening a channel", func() (err error) {
			ch, err = conn.Channel()
			return err
		})
		if err == nil {
			closes := ch.NotifyClose(make(chan *amqp.Error, 1))
			p.wg.Go(func() {
				for range closes {
				}
			})
			err = p.src.rpc(ctx, conn, "enabling publisher confirms", func() error { return ch.Confirm(false) })
		}
		if err != nil {
			_ = conn.CloseDeadline(time.Now().Add(time.Second))
			return nil, err
		}
		p.conn, p.ch = conn, ch
		p.conf = newConfirmer(ch, &p.wg)
		clear(p.declared)
	}
	if !p.declared[queue] {
		topo := topology{queue: queue, qtype: p.cfg.QueueType, limit: p.cfg.DeliveryLimit}
		d := &declarer{conn: p.conn, log: p.log, rpc: func(ctx context.Context, what string, fn func() error) error {
			return p.src.rpc(ctx, p.conn, what, fn)
		}}
		err := d.queue(ctx, topo.source(), false)
		d.close()
		if err != nil {
			return nil, err
		}
		p.declared[queue] = true
	}
	return p.conf, nil
}

// reopen drops conf's channel and connection when they are still the
// current ones, so the next try connects again (to the next node of a
// cluster URL). A quorum queue's client inside the broker's channel can stay
// bound to a dead leader: on RabbitMQ 3.10, a channel whose first publish to
// a quorum queue raced with a failover to a new leader nacked every later
// publish for minutes, while a new channel was confirmed at once.
func (p *Publisher) reopen(conf *confirmer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conf == conf {
		p.dropLocked()
	}
}

func (p *Publisher) forget(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.declared, queue)
}

func (p *Publisher) dropLocked() {
	if p.conn != nil {
		_ = p.conn.CloseDeadline(time.Now().Add(time.Second))
	}
	p.conn, p.ch, p.conf = nil, nil, nil
}

// Close closes the connection. It is idempotent.
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
