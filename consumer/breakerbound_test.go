package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// returningDependency is a Prober that is down until armed, and answers from
// 1ns after the first probe that starts once it is armed. That probe, begun
// while it is down, hangs until its ProbeTimeout (as a connect to a host
// that drops packets does): the dependency comes back just as a probe that
// will fail starts, the worst case of the breaker's resume bound.
type returningDependency struct {
	mu    sync.Mutex
	armed bool
	upAt  time.Time // zero while down
}

func (d *returningDependency) arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = true
}

// up reports whether the dependency answers now, and when it came back.
func (d *returningDependency) up() (bool, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.upAt.IsZero() && !time.Now().Before(d.upAt), d.upAt
}

func (d *returningDependency) Probe(ctx context.Context) error {
	d.mu.Lock()
	if d.armed && d.upAt.IsZero() {
		d.upAt = time.Now().Add(time.Nanosecond)
	}
	d.mu.Unlock()
	if up, _ := d.up(); up {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("dependency down: %w", ctx.Err())
}

// firstLeaseLost hands out deliveries whose lease is lost when lost is
// closed: the first delivery's only, later ones (a redelivery) keep theirs.
type firstLeaseLost struct {
	consumer.Source
	lost chan struct{}
	mu   sync.Mutex
	n    int
}

func (s *firstLeaseLost) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	ds, err := s.Source.Receive(ctx, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range ds {
		var lost chan struct{} // nil: never lost
		if s.n == 0 {
			lost = s.lost
		}
		s.n++
		ds[i] = leasedDelivery{Delivery: d, lost: lost}
	}
	return ds, err
}

// closeClock is a recorder that also notes when the breaker closed.
type closeClock struct {
	*recorder
	mu       sync.Mutex
	closedAt time.Time
}

func (c *closeClock) BreakerChanged(open bool) {
	c.recorder.BreakerChanged(open)
	if !open {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.closedAt = time.Now()
	}
}

// TestBreakerResumeBound: once the dependency that opened the breaker answers
// again, intake resumes within OutageBackoff.MaxInterval + ProbeTimeout (the
// bound Config.OutageBackoff states; probes here answer at once), even when
// it comes back just as a probe that will time out starts and the backoff
// jitters by half. Each trial runs on synctest's fake clock, so the bound is
// exact. Catches: a probe wait jittered above MaxInterval (with Jitter 0.5
// half of the waits at the cap are; 20 trials miss that with probability
// 2^-20), and a probe schedule that stalls once the dependency is back.
func TestBreakerResumeBound(t *testing.T) {
	const maxInterval, probeTimeout = time.Second, 300 * time.Millisecond
	for trial := range 20 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dep := &returningDependency{}
				h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
					if up, _ := dep.up(); !up {
						return consumer.UnavailableFrom(errors.New("database down"), dep)
					}
					return nil
				})
				broker := memory.NewBroker()
				counting := adaptertest.NewCountingSource(broker.NewSource("src", "test"))
				src := &firstLeaseLost{Source: counting, lost: make(chan struct{})}
				clock := &closeClock{recorder: newRecorder()}
				c, err := consumer.New(src, h, consumer.Config{
					Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"),
					Name:       "test", Concurrency: 1, BreakerThreshold: 1, Logger: discard, Observer: clock,
					ProbeTimeout:  probeTimeout,
					OutageBackoff: retry.Policy{InitialInterval: maxInterval, MaxInterval: maxInterval, Jitter: 0.5},
				})
				if err != nil {
					t.Fatal(err)
				}
				stop := startConsumer(t, c)
				defer stop()
				if err := broker.Publish(context.Background(), "src", msgN(0, "a")); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the breaker to open", c.Paused)
				// The held delivery's lease ends, so only the breaker's
				// probes can find the dependency back.
				close(src.lost)
				waitFor(t, "the held delivery to be abandoned", func() bool { return clock.count(consumer.OutcomeAbandoned) == 1 })
				dep.arm()
				waitFor(t, "the breaker to close", func() bool { return !c.Paused() })
				_, upAt := dep.up()
				clock.mu.Lock()
				took := clock.closedAt.Sub(upAt)
				clock.mu.Unlock()
				if took < 0 || took > maxInterval+probeTimeout {
					t.Errorf("intake resumed %s after the dependency came back, want within [0, %s]", took, maxInterval+probeTimeout)
				}
			})
		})
	}
}
