package rabbitmq

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// publishChannel is a session's channel for retry and dead-letter copies,
// in confirm mode. A nacked copy renews it (renewPublish) rather than
// ending the session: RabbitMQ keeps a quorum queue's client per channel,
// and on 3.10 a channel whose client stayed bound to a leader that failed
// over nacks every later publish to that queue, while a new channel is
// confirmed at once. The session's deliveries, on the consume channel, stay
// valid throughout.
type publishChannel struct {
	ch   *amqp.Channel
	conf *confirmer
	// retired is set before renewPublish closes the channel, so its closing
	// does not end the session.
	retired chan struct{}
}

// openPublish opens a publish channel on sess's connection. Its closing
// ends sess unless it was retired first.
func (src *Source) openPublish(ctx context.Context, sess *session) (*publishChannel, error) {
	var ch *amqp.Channel
	if err := src.rpc(ctx, sess.conn, "opening the publish channel", func() (err error) {
		ch, err = sess.conn.Channel()
		return err
	}); err != nil {
		return nil, err
	}
	pc := &publishChannel{ch: ch, retired: make(chan struct{})}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	src.wg.Go(func() {
		var cause error = fmt.Errorf("publish channel closed")
		for e := range closed {
			if e != nil {
				cause = fmt.Errorf("publish channel closed: %w", e)
			}
		}
		select {
		case <-pc.retired:
		default:
			src.die(sess, cause)
		}
	})
	src.drainFlow(ch)
	if err := src.rpc(ctx, sess.conn, "enabling publisher confirms", func() error { return ch.Confirm(false) }); err != nil {
		_ = ch.Close()
		return nil, err
	}
	pc.conf = newConfirmer(ch, &src.wg)
	return pc, nil
}

// renewPublish replaces sess's publish channel old, after a copy on it was
// nacked, by a new one, and closes old (publishes still in flight on it
// fail as not confirmed and are tried again by the runtime). A renewal
// another copy did already is not repeated. When no new channel opens,
// the session ends and the next one connects again.
func (src *Source) renewPublish(ctx context.Context, sess *session, old *publishChannel, cause error) {
	sess.pubMu.Lock()
	defer sess.pubMu.Unlock()
	if sess.pub.Load() != old || sess.isLost() {
		return
	}
	pc, err := src.openPublish(ctx, sess)
	if err != nil {
		src.die(sess, fmt.Errorf("%w; renewing the publish channel: %w", cause, err))
		return
	}
	sess.pub.Store(pc)
	close(old.retired)
	src.wg.Go(func() { _ = old.ch.Close() })
	src.log.Warn("a copy was not confirmed; publishing copies on a new channel", "generation", sess.gen, "cause", cause)
}
