package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// tally counts one consumer's settlement events.
type tally struct {
	mu       sync.Mutex
	outcomes map[consumer.Outcome]int
	dead     []consumer.Event
	final    int           // deliveries processed, skipped as duplicates or dead-lettered
	settled  chan struct{} // final grew
}

func newTally() *tally {
	return &tally{outcomes: map[consumer.Outcome]int{}, settled: make(chan struct{}, 1)}
}

func (t *tally) Settled(_ context.Context, ev consumer.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outcomes[ev.Outcome]++
	switch ev.Outcome {
	case consumer.OutcomeProcessed, consumer.OutcomeDuplicate, consumer.OutcomeDeadLettered:
		if ev.Outcome == consumer.OutcomeDeadLettered {
			t.dead = append(t.dead, ev)
		}
		t.final++
		wakeOne(t.settled)
	}
}

func (t *tally) BreakerChanged(bool) {}

// waitFinal waits until n deliveries ended for good.
func (t *tally) waitFinal(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		final := t.final
		t.mu.Unlock()
		if final >= n {
			return nil
		}
		select {
		case <-t.settled:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages settled: %w", final, n, ctx.Err())
		}
	}
}
