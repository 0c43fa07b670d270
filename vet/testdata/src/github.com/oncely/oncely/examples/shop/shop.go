// Package shop stands for one of oncely's examples: user code, in scope.
package shop

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

func run(ctx context.Context, src consumer.Source, d consumer.Delivery) error {
	if _, err := consumer.New(src, nil, consumer.Config{Name: "x"}); err != nil {
		return err
	}
	return d.Ack(ctx) // want `Ack settles a delivery outside the runtime`
}
