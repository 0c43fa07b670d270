package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/internal/startpos"
	"github.com/oncely/oncely/consumer"
)

// puller is the pull subscription of one stream's durable consumer.
type puller struct {
	subject       string
	depth         int               // the pull buffer (PullMaxMessages)
	maxAckPending int               // its durable consumer's MaxAckPending; -1: none
	start         startpos.Position // where its durable consumer starts if New creates it; earliest on a later reopen
	slots         chan struct{}     // a token for each message in the inbox or about to be
	failed        chan error        // one pending signal: the subscription failed, and why
	settled       *settledRing      // guarded by Source.mu

	mu     sync.Mutex
	cc     jetstream.ConsumeContext
	closed bool // Close drained it; never reopened
}

// Config.Prefetch is divided between the two streams: an eighth (at
// least 2) for the retry stream, the rest for the source stream, where
// throughput needs it (JetStream serves a pull consumer in pulls of up to
// its buffer: N1 drained 74,000 msgs/s with a buffer of 48, 82,000 with 64
// and 114,000 with 128). Each stream's share is its pull buffer plus its
// quota in the inbox, an eighth of the share (at least 1): at the default
// 256, the source stream buffers 196 and queues 28, the retry stream 28
// and 4.
//
// The inbox (internal/inbox) is the simple hand-off from Consume callbacks
// that keeps this bound: what made N1 pay (0.95 of the raw loop, pooled
// over 15 rounds, 2026-12-04) is the split it allows; an inbox over
// Messages().Next with the pull buffers cut to fit did not (see
// docs/benchmarks-log.md, "NATS JetStream", fourth look).
func retryShare(prefetch int) int { return max(2, prefetch/8) }

func sourceShare(prefetch int) int { return prefetch - retryShare(prefetch) }

func newPuller(subject string, share, maxAckPending, prefetch int) *puller {
	q := max(1, share/8)
	return &puller{subject: subject, depth: max(1, share-q), maxAckPending: maxAckPending,
		slots: make(chan struct{}, q), failed: make(chan error, 1), settled: newSettledRing(prefetch)}
}

// retryMaxAckPending is the retry stream's consumer's MaxAckPending: none.
// A retried copy delivered before its oncely-retry-not-before is nak'd with
// the rest of its delay, and the server counts it as unacknowledged until
// it is delivered again: with a limit, copies waiting out long delays would
// fill it and hold back every copy behind them in the stream, however soon
// due. Without one, a waiting copy costs the server an entry in the
// consumer's pending list and the Source nothing (it holds no buffer, inbox
// slot or goroutine for it), and what the Sources hold of the retry stream
// is still bounded, per Source, by its share of Config.Prefetch and what
// the runtime's MaxInFlight takes. Config.MaxAckPending bounds the source
// stream's consumer.
const retryMaxAckPending = -1

// open (re)creates p's stream and durable consumer when missing and starts
// a pull subscription on it, whose messages its callback (on the
// subscription's goroutine) queues in the inbox.
func (src *Source) open(ctx context.Context, p *puller) error {
	s, err := ensureStream(ctx, src.js, p.subject, src.cfg.Replicas)
	if err != nil {
		return err
	}
	c, err := ensureConsumer(ctx, s, src.cfg, p.maxAckPending, p.start)
	if err != nil {
		return err
	}
	// A consumer that vanished later (a server restarted without its
	// store, a deleted consumer) is recreated at the stream's start, so
	// nothing kept is skipped.
	p.start = startpos.Position{}
	cc, err := c.Consume(func(m jetstream.Msg) { src.deliver(p, m) },
		jetstream.PullMaxMessages(p.depth), jetstream.PullExpiry(src.cfg.PollWait),
		jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) { p.fail(src, cc, err) }))
	if err != nil {
		return fmt.Errorf("pulling from consumer %s on stream %s: %w", src.cfg.Consumer, StreamName(p.subject), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cc.Stop()
		return consumer.ErrSourceClosed
	}
	p.cc = cc
	return nil
}

// deliver holds m (renewed from now on) unless track absorbs it, and
// queues it for Receive once p has a slot for it in the inbox (the
// subscription waits meanwhile, so its buffer refills only as Receive
// takes messages), unless accept turns it away.
func (src *Source) deliver(p *puller, m jetstream.Msg) {
	d := src.track(p, m)
	if d == nil {
		return
	}
	reserved := p.reserve(src.closing)
	if !src.accept(d) && reserved {
		p.free()
	}
}

// fail records that subscription cc reported err for supervise. A
// subscription already replaced, or a Source closing, is left alone.
func (p *puller) fail(src *Source, cc jetstream.ConsumeContext, err error) {
	select {
	case <-src.closing:
		return
	default:
	}
	if cc != p.current() {
		return
	}
	select {
	case p.failed <- err:
	default:
	}
}

// reserve takes one of p's slots in the inbox for the next message,
// waiting while p has its quota there; it reports false, taking none,
// once the Source closes (nothing is queued then).
func (p *puller) reserve(closing <-chan struct{}) bool {
	select {
	case p.slots <- struct{}{}:
		return true
	case <-closing:
		return false
	}
}

// free gives a slot back: its message left the inbox, or was never put.
func (p *puller) free() { <-p.slots }

// drain ends p's pull subscription for good: its buffered messages still
// reach the callback. It returns a channel closed once they did.
func (p *puller) drain() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.cc.Drain()
	return p.cc.Closed()
}

func (p *puller) current() jetstream.ConsumeContext {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cc
}

// supervise opens p's pull subscription again, with backoff, each time it
// failed (its consumer or stream was deleted, heartbeats stopped),
// creating what is missing, until Close: intake never stops by itself.
//
// Missed heartbeats alone (a starved process, a slow server) do not end a
// subscription: nats.go pulls again by itself. Servers before 2.10 report
// a deleted consumer only that way, so the consumer is looked up first and
// the subscription replaced only when that fails. Replacing it needlessly
// would strand what it buffered until AckWait, and count those deliveries
// against Config.MaxDeliver.
func (src *Source) supervise(p *puller) {
	for {
		var err error
		select {
		case err = <-p.failed:
		case <-src.closing:
			return
		}
		if errors.Is(err, jetstream.ErrNoHeartbeat) && src.consumerExists(p) {
			src.log.Info("missed heartbeats on the pull subscription; its consumer is there, pulling on", "stream", StreamName(p.subject))
			continue
		}
		src.log.Warn("pulling messages failed; opening the pull subscription again", "stream", StreamName(p.subject), "error", err)
		// What the failed subscription buffered comes back after AckWait.
		p.current().Stop()
		for try := 1; ; try++ {
			select {
			case <-time.After(min(time.Duration(try)*200*time.Millisecond, 5*time.Second)):
			case <-src.closing:
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), src.cfg.RPCTimeout)
			err := src.open(ctx, p)
			cancel()
			if err == nil {
				src.log.Info("pulling again", "stream", StreamName(p.subject))
				break
			}
			if errors.Is(err, consumer.ErrSourceClosed) {
				return
			}
			src.log.Warn("reopening the pull subscription failed; trying again", "stream", StreamName(p.subject), "error", err)
		}
	}
}

// consumerExists reports whether p's durable consumer answers a lookup
// within Config.RPCTimeout; a lookup under way when Close begins ends then.
func (src *Source) consumerExists(p *puller) bool {
	ctx, cancel := context.WithTimeout(src.life, src.cfg.RPCTimeout)
	defer cancel()
	_, err := src.js.Consumer(ctx, StreamName(p.subject), src.cfg.Consumer)
	return err == nil
}
