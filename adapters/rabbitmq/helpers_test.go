package rabbitmq

import (
	"context"
	"sync"
	"testing"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// runConsumer runs a consumer.Consumer over src and returns a stop func
// (also run at cleanup) that stops it gracefully and checks it stopped
// cleanly.
func runConsumer(t testing.TB, src consumer.Source, h consumer.Handler, cfg consumer.Config, mws ...consumer.Middleware) (c *consumer.Consumer, stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	return adaptertest.RunConsumer(t, src, h, cfg, mws...)
}

// counter is an Observer counting outcomes.
type counter struct {
	mu       sync.Mutex
	outcomes map[consumer.Outcome]int
}

func newCounter() *counter { return &counter{outcomes: make(map[consumer.Outcome]int)} }

func (c *counter) Settled(_ context.Context, ev consumer.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outcomes[ev.Outcome]++
}

func (c *counter) BreakerChanged(bool) {}

func (c *counter) get(o consumer.Outcome) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outcomes[o]
}

// set is a concurrency-safe multiset of message IDs.
type set struct {
	mu sync.Mutex
	m  map[string]int
}

func newSet() *set { return &set{m: make(map[string]int)} }

func (s *set) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id]++
}

func (s *set) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *set) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *set) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}
