package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// session is one connection generation: the connection, its consume
// channel and its publish channel. Any of them closing ends the session
// (lost closes); the supervisor then opens the next one. Deliveries carry
// their session, so a settlement never reaches another generation's channel:
// delivery tags restart at 1 on a new channel, and an old tag acked there
// would ack an unrelated message.
type session struct {
	gen  uint64
	conn *amqp.Connection
	ch   *amqp.Channel
	acks *acker
	tag  string

	// pub is the channel copies are published on; pubMu serialises its
	// renewal (see publishChannel).
	pub   atomic.Pointer[publishChannel]
	pubMu sync.Mutex

	lost     chan struct{}
	lostOnce sync.Once
	// closing is set by Source.Close before its orderly shutdown, so the
	// channel closures it causes do not tear the connection down early.
	closing atomic.Bool
	// held counts deliveries received and not settled, for Backlog.
	held atomic.Int64
}

func (s *session) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// rpc runs fn, a channel or connection RPC that amqp091-go may block on
// forever, bounded by ctx and cfg.RPCTimeout. On timeout it closes conn,
// which makes fn return, and reports the timeout.
func (src *Source) rpc(ctx context.Context, conn *amqp.Connection, what string, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, src.cfg.RPCTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-ctx.Done():
		_ = conn.CloseDeadline(time.Now().Add(time.Second))
		return fmt.Errorf("%s: no answer from the broker (connection closed): %w", what, ctx.Err())
	}
}

// connect opens a session: connection, topology, consume channel with its
// prefetch, publish channel in confirm mode, and the consumer. Every Notify
// channel gets a goroutine that drains it until the library closes it.
func (src *Source) connect(ctx context.Context) (_ *session, err error) {
	conn, err := src.hosts.dial(ctx, src.cfg)
	if err != nil {
		return nil, err
	}
	gen := src.gens.Add(1)
	sess := &session{gen: gen, conn: conn, lost: make(chan struct{}), tag: fmt.Sprintf("oncely-%s-%d-%d", src.cfg.Consumer, src.instance, gen)}
	defer func() {
		if err != nil {
			sess.closing.Store(true)
			src.die(sess, err)
			_ = conn.CloseDeadline(time.Now().Add(time.Second))
		}
	}()
	log := src.log.With("generation", gen)

	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	src.wg.Go(func() { src.watchClose(sess, "connection", connClosed) })
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	src.wg.Go(func() {
		for b := range blocked {
			if b.Active {
				log.Warn("broker blocked the connection (memory or disk alarm); publishes wait", "reason", b.Reason)
			} else {
				log.Info("broker unblocked the connection")
			}
		}
	})

	rpc := func(ctx context.Context, what string, fn func() error) error { return src.rpc(ctx, conn, what, fn) }
	if err := src.liveTopo().declareAll(ctx, &declarer{conn: conn, rpc: rpc, log: log}); err != nil {
		return nil, err
	}
	if err := rpc(ctx, "opening the consume channel", func() (err error) {
		sess.ch, err = conn.Channel()
		return err
	}); err != nil {
		return nil, err
	}
	closed := sess.ch.NotifyClose(make(chan *amqp.Error, 1))
	src.wg.Go(func() { src.watchClose(sess, "channel", closed) })
	src.drainFlow(sess.ch)
	cancels := sess.ch.NotifyCancel(make(chan string, 1))
	src.wg.Go(func() {
		for tag := range cancels {
			src.die(sess, fmt.Errorf("broker cancelled consumer %s (queue deleted or failed over)", tag))
		}
	})
	if err := rpc(ctx, "setting prefetch", func() error { return sess.ch.Qos(src.cfg.Prefetch, 0, false) }); err != nil {
		return nil, err
	}
	pc, err := src.openPublish(ctx, sess)
	if err != nil {
		return nil, err
	}
	sess.pub.Store(pc)
	sess.acks = newAcker(sess.ch.Ack)
	src.wg.Go(func() {
		// basic.ack has no reply: a failed send means the channel or the
		// socket is gone, and with it the lease. End the session now, so
		// the runtime abandons its deliveries at once.
		sess.acks.run(sess.lost, func(err error) { src.die(sess, fmt.Errorf("acking: %w", err)) })
	})
	var deliveries <-chan amqp.Delivery
	if err := rpc(ctx, "consuming "+src.cfg.Queue, func() (err error) {
		deliveries, err = sess.ch.Consume(src.cfg.Queue, sess.tag, false, false, false, false, nil)
		return err
	}); err != nil {
		return nil, err
	}

	src.mu.Lock()
	if src.closed {
		src.mu.Unlock()
		return nil, errSourceClosing
	}
	src.cur = sess
	src.mu.Unlock()
	src.wg.Go(func() {
		for d := range deliveries {
			src.accept(sess, d)
		}
		if !sess.closing.Load() { // Close closes the channel itself, after its acks
			src.die(sess, errors.New("consumer stopped: its channel closed or the broker cancelled it"))
		}
	})
	log.Info("connected and consuming", "queue", src.cfg.Queue, "prefetch", src.cfg.Prefetch)
	return sess, nil
}

var errSourceClosing = errors.New("source is closing")

// drainFlow logs the broker's flow control on ch until ch closes.
func (src *Source) drainFlow(ch *amqp.Channel) {
	flow := ch.NotifyFlow(make(chan bool, 4))
	src.wg.Go(func() {
		for active := range flow {
			src.log.Warn("broker flow control on a channel", "active", active)
		}
	})
}

func (src *Source) watchClose(sess *session, what string, c <-chan *amqp.Error) {
	var cause error = fmt.Errorf("%s closed", what)
	for e := range c {
		if e != nil {
			cause = fmt.Errorf("%s closed: %w", what, e)
		}
	}
	src.die(sess, cause)
}

// die ends sess once: its deliveries' Lost channels close (the runtime
// abandons them; the broker redelivers them), buffered deliveries are
// dropped, and, unless Close is shutting it down in order, the connection
// is closed so the supervisor can open the next generation.
func (src *Source) die(sess *session, cause error) {
	sess.lostOnce.Do(func() {
		close(sess.lost)
		src.inbox.Remove(func(d *delivery) bool { return d.sess == sess })
		if sess.closing.Load() {
			return
		}
		src.log.Warn("connection generation lost; unsettled deliveries will be redelivered", "generation", sess.gen, "cause", cause)
		src.wg.Go(func() { _ = sess.conn.CloseDeadline(time.Now().Add(time.Second)) })
	})
}

// supervise reconnects, with backoff and jitter, whenever the current
// session is lost, until the Source closes.
func (src *Source) supervise(sess *session) {
	for {
		select {
		case <-sess.lost:
		case <-src.closing:
			return
		}
		for try := 1; ; try++ {
			wait := src.cfg.ReconnectBackoff.Delay(try, nil)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-src.closing:
				t.Stop()
				return
			}
			next, err := src.connect(src.closingCtx)
			if err == nil {
				src.reconnects.Add(1)
				sess = next
				break
			}
			if errors.Is(err, errSourceClosing) || src.closingCtx.Err() != nil {
				return
			}
			src.log.Warn("reconnect failed; trying again with backoff", "try", try, "error", err)
		}
	}
}
