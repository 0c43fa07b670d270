// Package events is the pricing team's Kafka emitter.
package events

import (
	"github.com/segmentio/kafka-go"
)

// Emitter publishes pricing events; embed it to get WriteMessages.
type Emitter struct {
	*kafka.Writer
}

// NewEmitter returns an Emitter writing to topic.
func NewEmitter(topic string) Emitter {
	return Emitter{Writer: &kafka.Writer{Topic: topic}}
}
