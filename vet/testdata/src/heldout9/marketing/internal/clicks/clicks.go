// Package clicks samples click events into an in-memory histogram.
package clicks

import (
	"context"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// Sampler keeps a histogram of clicks per campaign.
type Sampler struct {
	mu sync.Mutex
	h  map[string]int
}

// NewSampler returns an empty sampler.
func NewSampler() *Sampler { return &Sampler{h: map[string]int{}} }

// Handle counts one click.
func (s *Sampler) Handle(ctx context.Context, msg *consumer.Message) error {
	s.mu.Lock()
	s.h[msg.Key]++
	s.mu.Unlock()
	return nil
}
