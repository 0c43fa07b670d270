package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/consumer"
)

// ErrStaleDelivery is wrapped by settlement errors for a delivery whose
// connection generation is gone (connection or channel lost, or the Source
// closed). Its Lost channel is closed, the runtime abandons it, and the
// broker redelivers it; nothing was acked, and no ack can reach the new
// channel, where the same delivery tag names another message.
var ErrStaleDelivery = errors.New("rabbitmq: delivery belongs to a lost connection generation")

// delivery is one AMQP delivery on one session.
type delivery struct {
	src  *Source
	sess *session
	tag  uint64
	msg  *consumer.Message
	tmpl amqp.Publishing // properties for copies

	mu      sync.Mutex
	settled bool
	trimmed bool // the last copy published was trimmed
}

// Message returns the message.
func (d *delivery) Message() *consumer.Message { return d.msg }

// Lost is closed when the delivery's channel or connection is gone.
func (d *delivery) Lost() <-chan struct{} { return d.sess.lost }

// Ack records the delivery as processed; the session's flusher sends the
// basic.ack on the delivery's own channel, coalesced with its neighbours'
// (see the package documentation). It fails with ErrStaleDelivery when the
// generation has ended or the Source has closed.
func (d *delivery) Ack(ctx context.Context) error { return d.settle(ctx, "ack", nil) }

// Retry publishes a copy to the retry queue of the smallest tier >= after,
// waits for the broker's confirmation, then acks the original as Ack does.
// The copy comes back after exactly that tier's delay; the runtime asks for
// a tier (Capabilities.RetryDelay is Tiers.Choose), so it logs the delay the
// copy waits.
// A copy over the broker's limits is trimmed first (see Config.MaxMessageSize);
// one that cannot fit fails with an error wrapping consumer.ErrCopyRefused
// and the original stays unsettled.
func (d *delivery) Retry(ctx context.Context, after time.Duration, headers map[string]string) error {
	return d.publishCopy(ctx, "retry", d.src.retryQueueFor(after), headers, false)
}

// DeadLetter publishes a copy to the dead-letter queue, waits for the
// broker's confirmation, then acks the original as Ack does. A copy over the
// broker's limits is trimmed first, down to an empty body with marker
// headers (see Config.MaxMessageSize).
func (d *delivery) DeadLetter(ctx context.Context, headers map[string]string) error {
	return d.publishCopy(ctx, "dead-letter", d.src.topo.dlq(), headers, true)
}

// CopyTrimmed reports whether the copy last published by Retry or
// DeadLetter was trimmed to fit the broker's limits.
func (d *delivery) CopyTrimmed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trimmed
}

func (d *delivery) publishCopy(ctx context.Context, what, queue string, headers map[string]string, removeBody bool) error {
	return d.settle(ctx, what, func(ctx context.Context) error {
		p, trimmed, err := d.fit(what, d.copy(nil), idHeader(d.msg.ID, headers), removeBody)
		if err != nil {
			return err
		}
		if err := d.publish(ctx, queue, p); err != nil {
			return err
		}
		d.trimmed = trimmed
		return nil
	})
}

// publish publishes a copy to queue on the delivery's session and waits
// for its confirmation. When the broker returns it unroutable (someone
// deleted the queue), the topology is declared again, so the next try finds
// the queue; the failure is still reported, since nothing was stored. When
// the broker nacks it (before ctx ends), the next copies go out on a new
// publish channel (see publishChannel); the session and its deliveries
// stay.
func (d *delivery) publish(ctx context.Context, queue string, p amqp.Publishing) error {
	pc := d.sess.pub.Load()
	err := pc.conf.publishOne(ctx, queue, p)
	if errors.Is(err, ErrNotConfirmed) && ctx.Err() == nil {
		d.src.renewPublish(ctx, d.sess, pc, fmt.Errorf("a copy to %s was not confirmed: %w", queue, err))
	}
	if errors.Is(err, ErrUnroutable) {
		conn := d.sess.conn
		derr := d.src.liveTopo().declareAll(ctx, &declarer{conn: conn, log: d.src.log, rpc: func(ctx context.Context, what string, fn func() error) error {
			return d.src.rpc(ctx, conn, what, fn)
		}})
		d.src.log.Warn("a copy's queue is missing; declared the topology again", "message_id", d.msg.ID, "queue", queue, "error", derr)
	}
	return err
}

// copy is the publishing for a retried, parked or dead-lettered copy: same
// message ID, body and properties, the given headers (without the broker's
// own), persistent; no expiration and no user-id. An ID too long for the
// message_id property stays in the message-id header it came in.
func (d *delivery) copy(h map[string]string) amqp.Publishing {
	p := d.tmpl
	p.Headers = publishHeaders(h)
	if len(d.msg.ID) <= maxShortString {
		p.MessageId = d.msg.ID
	}
	p.Body = d.msg.Body
	return p
}

// idHeader returns h with the message-id header set to id when id is too
// long for the message_id property (AMQP short string, 255 bytes): writing
// it there would fail the frame and close the connection, on every
// redelivery again.
func idHeader(id string, h map[string]string) map[string]string {
	if len(id) <= maxShortString || h[consumer.HeaderMessageID] == id {
		return h
	}
	h = maps.Clone(h)
	if h == nil {
		h = make(map[string]string, 1)
	}
	h[consumer.HeaderMessageID] = id
	return h
}

// settle runs publish (if any) and then records the ack with its
// session's acker. A stale delivery is never settled; a failed publish
// leaves the delivery unsettled.
func (d *delivery) settle(ctx context.Context, what string, publish func(context.Context) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return consumer.ErrAlreadySettled
	}
	stale := func(err error) error {
		if err != nil {
			return fmt.Errorf("%s of message %q (generation %d): %w (%v)", what, d.msg.ID, d.sess.gen, ErrStaleDelivery, err)
		}
		return fmt.Errorf("%s of message %q (generation %d): %w", what, d.msg.ID, d.sess.gen, ErrStaleDelivery)
	}
	if d.sess.isLost() {
		return stale(nil)
	}
	d.src.settling.add()
	defer d.src.settling.done()
	if publish != nil {
		if err := publish(ctx); err != nil {
			if d.sess.isLost() {
				return stale(err)
			}
			return fmt.Errorf("rabbitmq: %s of message %q: %w", what, d.msg.ID, err)
		}
	}
	if d.sess.isLost() || !d.sess.acks.record(d.tag) {
		return stale(nil)
	}
	d.settled = true
	d.sess.held.Add(-1)
	return nil
}
