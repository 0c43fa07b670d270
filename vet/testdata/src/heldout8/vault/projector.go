package vault

import (
	"context"
	"log/slog"
	"time"
)

// projector runs read-model updates in the background so that appends stay
// fast; a failed projection is retried a few times and then logged.
type projector struct {
	queue chan func(context.Context) error
	log   *slog.Logger
}

func newProjector(log *slog.Logger) *projector {
	return &projector{queue: make(chan func(context.Context) error, 1024), log: log}
}

// Enqueue schedules fn.
func (p *projector) Enqueue(fn func(context.Context) error) {
	p.queue <- fn
}

// Run executes queued projections until ctx ends.
func (p *projector) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case fn := <-p.queue:
			p.runWithRetry(ctx, fn)
		}
	}
}

func (p *projector) runWithRetry(ctx context.Context, fn func(context.Context) error) {
	var err error
	for attempt := range 3 {
		if err = fn(ctx); err == nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	p.log.Error("projection failed", "err", err)
}
