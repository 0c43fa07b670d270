package metering

import (
	"context"
	"sync/atomic"

	"github.com/oncely/oncely/consumer"
)

// progress remembers the last message seen, for the /debug page.
type progress struct {
	lastID    atomic.Value // string
	lastTrace atomic.Value // string
	handled   atomic.Int64
}

func (p *progress) middleware() consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			p.lastID.Store(msg.ID)
			p.lastTrace.Store(msg.Headers["traceparent"])
			err := next.Handle(ctx, msg)
			if err == nil {
				p.handled.Add(1)
			}
			return err
		})
	}
}
