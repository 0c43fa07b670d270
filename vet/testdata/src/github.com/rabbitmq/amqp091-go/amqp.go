// Package amqp091 is a stub of github.com/rabbitmq/amqp091-go.
package amqp091

import "context"

type Table map[string]any
type Delivery struct{}
type Channel struct{}

func (c *Channel) Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args Table) (<-chan Delivery, error) {
	return nil, nil
}

func (c *Channel) ConsumeWithContext(ctx context.Context, queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args Table) (<-chan Delivery, error) {
	return nil, nil
}
