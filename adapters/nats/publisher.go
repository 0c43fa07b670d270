package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// Publisher publishes messages to sources the way Sources read them: the ID
// in the message-id header, the key in the key header, every header as
// given. Its methods are safe for concurrent use.
type Publisher struct {
	js        jetstream.JetStream
	keyHeader string
	replicas  int

	mu      sync.Mutex
	streams map[string]bool // subjects whose stream is known to exist
}

// NewPublisher returns a Publisher on js; keyHeader "" means
// KeyHeaderDefault.
func NewPublisher(js jetstream.JetStream, keyHeader string) *Publisher {
	if keyHeader == "" {
		keyHeader = KeyHeaderDefault
	}
	return &Publisher{js: js, keyHeader: keyHeader, streams: map[string]bool{}}
}

// WithReplicas sets the replica count of the streams the Publisher creates
// (an existing stream keeps its own) and returns p; call it before the first
// Publish. Default 1.
func (p *Publisher) WithReplicas(n int) *Publisher {
	p.replicas = n
	return p
}

// Publish sends msgs to source in order, creating its stream when absent,
// and returns once the stream acknowledged every one (PubAck). The
// publishes are pipelined: all are sent, then every PubAck awaited.
func (p *Publisher) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	if err := checkSubject("source", source); err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	if err := p.ensure(ctx, source); err != nil {
		return err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	var errs []error
	for _, m := range msgs {
		f, err := p.js.PublishMsgAsync(outMsg(source, m.ID, m.Key, p.keyHeader, m.Body, m.Headers), jetstream.WithExpectStream(StreamName(source)))
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing %q: %w", m.ID, err))
			break
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, fmt.Errorf("publishing %q: %w", msgs[i].ID, err))
		case <-ctx.Done():
			return fmt.Errorf("nats: publishing to %s: %w", source, ctx.Err())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nats: publishing to %s: %w", source, errors.Join(errs...))
	}
	return nil
}

func (p *Publisher) ensure(ctx context.Context, subject string) error {
	p.mu.Lock()
	known := p.streams[subject]
	p.mu.Unlock()
	if known {
		return nil
	}
	if _, err := ensureStream(ctx, p.js, subject, p.replicas); err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	p.mu.Lock()
	p.streams[subject] = true
	p.mu.Unlock()
	return nil
}
