// Package kafka is a stub of github.com/segmentio/kafka-go.
package kafka

import "context"

type Message struct {
	Key, Value []byte
}

type Writer struct{ Topic string }

func (w *Writer) WriteMessages(ctx context.Context, msgs ...Message) error { return nil }
