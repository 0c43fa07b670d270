// Package events publishes the dairy's domain events to Kafka.
package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Emitter publishes JSON events on one topic.
type Emitter struct {
	client *kgo.Client
	topic  string
}

// NewEmitter returns an emitter on topic.
func NewEmitter(client *kgo.Client, topic string) *Emitter {
	return &Emitter{client: client, topic: topic}
}

// Emit publishes v and waits for the broker's acknowledgement.
func (e *Emitter) Emit(ctx context.Context, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("events: encode: %w", err)
	}
	for _, r := range e.client.ProduceSync(ctx, &kgo.Record{Topic: e.topic, Value: body}) {
		if r.Err != nil {
			return fmt.Errorf("events: produce to %s: %w", e.topic, r.Err)
		}
	}
	return nil
}
