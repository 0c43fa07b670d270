package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// puller is the pull subscription of one stream's durable consumer.
type puller struct {
	subject string

	mu     sync.Mutex
	it     jetstream.MessagesContext
	closed bool // Close drained it; never reopened
}

// open (re)creates p's stream and durable consumer when missing and starts
// a pull subscription on it.
func (src *Source) open(ctx context.Context, p *puller) error {
	s, err := ensureStream(ctx, src.js, p.subject)
	if err != nil {
		return err
	}
	c, err := ensureConsumer(ctx, s, src.cfg)
	if err != nil {
		return err
	}
	it, err := c.Messages(jetstream.PullMaxMessages(src.cfg.Prefetch), jetstream.PullExpiry(src.cfg.PollWait))
	if err != nil {
		return fmt.Errorf("pulling from consumer %s on stream %s: %w", src.cfg.Consumer, StreamName(p.subject), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		it.Stop()
		return consumer.ErrSourceClosed
	}
	p.it = it
	return nil
}

// drain ends p's pull subscription for good: its buffered messages are still
// returned by Next.
func (p *puller) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.it.Drain()
}

func (p *puller) iter() jetstream.MessagesContext {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.it
}

// pump moves messages from p's pull subscription to Receive until Close
// drained it. A subscription that fails otherwise (its consumer or stream
// was deleted, heartbeats stopped) is opened again, with backoff, creating
// what is missing: intake never stops by itself.
func (src *Source) pump(p *puller) {
	for try := 0; ; {
		m, err := p.iter().Next()
		if err == nil {
			try = 0
			src.accept(m)
			continue
		}
		select {
		case <-src.closing:
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			continue // drained: the rest of its buffer, then closed
		default:
		}
		// The subscription ended, or missed its heartbeats (its consumer
		// may be gone: servers before 2.10 do not say so). Open it again;
		// what it buffered (nothing, when heartbeats stopped) comes back
		// after AckWait.
		src.log.Warn("pulling messages failed; opening the pull subscription again", "stream", StreamName(p.subject), "error", err)
		p.iter().Stop()
		for {
			try++
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
