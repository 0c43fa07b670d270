package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrNotConfirmed is wrapped by publish errors when the broker nacked a
// publish or its channel closed before the confirmation arrived. The message
// may or may not be in the queue; the caller publishes again (consumers
// absorb the duplicate by its message ID).
var ErrNotConfirmed = errors.New("publish not confirmed by the broker")

// ErrUnroutable is wrapped by publish errors when the broker returned a
// mandatory publish because no queue took it (the target queue is missing).
var ErrUnroutable = errors.New("publish returned unroutable")

// outgoing is one publish to a queue through the default exchange.
type outgoing struct {
	queue string
	msg   amqp.Publishing
}

func (o outgoing) key() string { return o.msg.MessageId + "\x00" + o.queue }

// confirmer publishes on one channel in confirm mode, mandatory, and waits
// for each publish's confirmation. A confirmation alone does not prove a
// message was queued (an unroutable message is confirmed too), so it also
// watches basic.return: the broker sends the return before the ack, and
// amqp091-go hands both over in order, so once the ack is in, a barrier
// through the returns loop shows whether a return came first.
type confirmer struct {
	ch       *amqp.Channel
	barrier  chan chan struct{}
	loopDone chan struct{}

	mu   sync.Mutex
	keys map[string]*keyState
}

// keyState counts returns for a (message ID, queue) pair while publishes
// of it are in flight. A return is charged to every publish in flight with
// that key; a false failure only causes another publish.
type keyState struct {
	inflight int
	returned int
}

// newConfirmer puts ch in confirm mode and starts draining its returns;
// wg tracks the drain goroutine, which ends when ch closes.
func newConfirmer(ch *amqp.Channel, wg *sync.WaitGroup) *confirmer {
	c := &confirmer{
		ch:       ch,
		barrier:  make(chan chan struct{}),
		loopDone: make(chan struct{}),
		keys:     make(map[string]*keyState),
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 64))
	wg.Go(func() { c.loop(returns) })
	return c
}

func (c *confirmer) loop(returns <-chan amqp.Return) {
	defer close(c.loopDone)
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				return
			}
			c.record(r)
		case reply := <-c.barrier:
			for drained := false; !drained; {
				select {
				case r, ok := <-returns:
					if !ok {
						close(reply)
						return
					}
					c.record(r)
				default:
					drained = true
				}
			}
			close(reply)
		}
	}
}

func (c *confirmer) record(r amqp.Return) {
	key := r.MessageId + "\x00" + r.RoutingKey
	c.mu.Lock()
	defer c.mu.Unlock()
	if ks := c.keys[key]; ks != nil {
		ks.returned++
	}
}

func (c *confirmer) begin(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.keys[key]
	if ks == nil {
		ks = &keyState{}
		c.keys[key] = ks
	}
	ks.inflight++
	return ks.returned
}

// end finishes one publish of key and reports whether a return arrived
// for key since begin returned snap.
func (c *confirmer) end(key string, snap int) (returned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.keys[key]
	returned = ks.returned > snap
	if ks.inflight--; ks.inflight == 0 {
		delete(c.keys, key)
	}
	return returned
}

// sync waits until every return the library received so far is recorded.
func (c *confirmer) sync(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case c.barrier <- reply:
	case <-c.loopDone:
		return nil // every return was recorded before the loop ended
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish sends msgs and waits for all of them; errs[i] is nil only when
// msgs[i] was confirmed and not returned. Writes are pipelined: all
// publishes go out, then the confirmations are awaited.
func (c *confirmer) publish(ctx context.Context, msgs []outgoing) (errs []error) {
	errs = make([]error, len(msgs))
	dcs := make([]*amqp.DeferredConfirmation, len(msgs))
	snaps := make([]int, len(msgs))
	for i, o := range msgs {
		snaps[i] = c.begin(o.key())
		dc, err := c.ch.PublishWithDeferredConfirmWithContext(ctx, "", o.queue, true, false, o.msg)
		if err == nil && dc == nil {
			err = errors.New("channel is not in confirm mode")
		}
		if err != nil {
			errs[i] = fmt.Errorf("publishing to %q: %w", o.queue, err)
			continue
		}
		dcs[i] = dc
	}
	for i, dc := range dcs {
		if dc == nil {
			continue
		}
		select {
		case <-dc.Done():
			if !dc.Acked() {
				errs[i] = fmt.Errorf("publishing to %q: %w (nacked, or the channel closed first)", msgs[i].queue, ErrNotConfirmed)
			}
		case <-ctx.Done():
			errs[i] = fmt.Errorf("publishing to %q: %w: %w", msgs[i].queue, ErrNotConfirmed, ctx.Err())
		}
	}
	serr := c.sync(ctx)
	for i, o := range msgs {
		returned := c.end(o.key(), snaps[i])
		if errs[i] != nil {
			continue
		}
		switch {
		case serr != nil:
			errs[i] = fmt.Errorf("publishing to %q: checking for a return: %w: %w", o.queue, ErrNotConfirmed, serr)
		case returned:
			errs[i] = fmt.Errorf("publishing to %q: %w: no such queue", o.queue, ErrUnroutable)
		}
	}
	return errs
}

// publishOne publishes one message and waits for its confirmation.
func (c *confirmer) publishOne(ctx context.Context, queue string, msg amqp.Publishing) error {
	return c.publish(ctx, []outgoing{{queue: queue, msg: msg}})[0]
}
