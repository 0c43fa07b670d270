package nats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// ErrReleased is wrapped by settlement errors for a delivery the Source gave
// back to the server (nak'd on Close): nothing was acked, the server
// redelivers it.
var ErrReleased = errors.New("nats: delivery was released to the server")

// delivery is one JetStream message held by a Source.
type delivery struct {
	src       *Source
	from      *puller // whose inbox slot it takes until Receive returns it
	key       heldKey
	delivered uint64           // the server's delivery count of the first delivery held
	msg       consumer.Message // one allocation with the delivery

	m jetstream.Msg // the latest delivery of the message (see adopt); guarded by mu

	mu       sync.Mutex
	settled  bool // acked
	released bool // nak'd by Close
	trimmed  bool
}

// Message returns the message.
func (d *delivery) Message() *consumer.Message { return &d.msg }

// Ack acknowledges the message. The ack is queued and sent in a burst with
// others by one goroutine (see acker), without waiting for the server's
// reply: an ack that is lost only makes the server redeliver the message
// after AckWait, which the idempotency claim absorbs. Close sends the acks
// still queued and flushes the connection, so every Ack that returned
// before it reaches the server.
func (d *delivery) Ack(ctx context.Context) error { return d.settle(ctx, "ack", "", nil, false) }

// Retry publishes a copy to the consumer's retry stream (RetrySubject), waits
// for the stream's acknowledgement (PubAck), then acks the original as Ack
// does. The copy carries oncely-retry-not-before (now + after unless the
// headers set it); delivered earlier, it is nak'd with the rest of its delay
// (NakWithDelay), so the delay is honoured however long it is.
func (d *delivery) Retry(ctx context.Context, after time.Duration, headers map[string]string) error {
	if consumer.NotBeforeFromHeaders(headers).IsZero() {
		headers = maps.Clone(headers)
		if headers == nil {
			headers = map[string]string{}
		}
		headers[consumer.HeaderRetryNotBefore] = time.Now().Add(after).UTC().Format(time.RFC3339Nano)
	}
	return d.settle(ctx, "retry", RetrySubject(d.src.cfg.Source, d.src.cfg.Consumer), headers, false)
}

// DeadLetter publishes a copy to the dead-letter stream (DeadLetterSubject),
// waits for its PubAck, then acks the original as Ack does. A copy over the
// server's max_payload is trimmed first (consumer.FitCopy).
func (d *delivery) DeadLetter(ctx context.Context, headers map[string]string) error {
	return d.settle(ctx, "dead-letter", DeadLetterSubject(d.src.cfg.Source, d.src.cfg.Consumer), headers, true)
}

// CopyTrimmed reports whether the copy last published was trimmed.
func (d *delivery) CopyTrimmed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trimmed
}

// settle publishes a copy to subject (if any) and confirms it, then acks.
// A failed publish leaves the delivery unsettled.
func (d *delivery) settle(ctx context.Context, what, subject string, headers map[string]string, dead bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return consumer.ErrAlreadySettled
	}
	if d.released {
		return fmt.Errorf("nats: %s of message %q: %w", what, d.msg.ID, ErrReleased)
	}
	if subject != "" {
		trimmed, err := d.publishCopy(ctx, subject, headers, dead)
		if err != nil {
			return fmt.Errorf("nats: %s of message %q: %w", what, d.msg.ID, err)
		}
		d.trimmed = trimmed
	}
	if err := d.src.acks.ack(d.m); err != nil {
		return fmt.Errorf("nats: acking message %q after its %s: %w", d.msg.ID, what, err)
	}
	d.settled = true
	d.src.forget(d, true)
	return nil
}

// publishCopy publishes the copy to subject's stream and waits for its
// PubAck.
func (d *delivery) publishCopy(ctx context.Context, subject string, headers map[string]string, dead bool) (bool, error) {
	kh := d.src.cfg.KeyHeader
	f, err := consumer.FitCopy(d.msg.Body, headers, d.src.limit, copySize, dead, consumer.HeaderMessageID, kh)
	if err != nil {
		return false, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.src.cfg.RPCTimeout)
		defer cancel()
	}
	m := outMsg(subject, d.msg.ID, d.msg.Key, kh, f.Body, f.Headers)
	_, err = d.src.js.PublishMsg(ctx, m, jetstream.WithExpectStream(StreamName(subject)))
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// No stream takes subject (deleted, or lost with a server that
		// restarted empty): create it and publish again.
		if _, err = ensureStream(ctx, d.src.js, subject, d.src.cfg.Replicas); err == nil {
			_, err = d.src.js.PublishMsg(ctx, m, jetstream.WithExpectStream(StreamName(subject)))
		}
	}
	if err != nil {
		return false, fmt.Errorf("publishing a copy to %s: %w", subject, err)
	}
	return f.Trimmed, nil
}

// inProgress renews the lease of an unsettled delivery.
func (d *delivery) inProgress() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.settled && !d.released {
		_ = d.m.InProgress()
	}
}
