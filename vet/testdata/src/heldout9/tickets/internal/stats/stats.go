// Package stats publishes booking statistics to Kafka on a timer.
package stats

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Stats counts bookings per event and publishes the counts.
type Stats struct {
	kafka *kgo.Client
	topic string

	mu     sync.Mutex
	counts map[string]int
}

// New returns stats publishing to topic.
func New(kafka *kgo.Client, topic string) *Stats {
	return &Stats{kafka: kafka, topic: topic, counts: map[string]int{}}
}

// Count counts one booking of event in memory.
func (s *Stats) Count(event string) {
	s.mu.Lock()
	s.counts[event]++
	s.mu.Unlock()
}

// Publish sends the counts and resets them; called by a ticker, never by a handler.
func (s *Stats) Publish(ctx context.Context) error {
	s.mu.Lock()
	counts := s.counts
	s.counts = map[string]int{}
	s.mu.Unlock()
	b, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	for _, r := range s.kafka.ProduceSync(ctx, &kgo.Record{Topic: s.topic, Value: b}) {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
