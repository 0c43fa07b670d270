// Package fake stands for one of oncely's own adapters: it builds a
// consumer and settles deliveries, and is skipped as framework code.
package fake

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

func run(ctx context.Context, src consumer.Source, d consumer.Delivery) error {
	if _, err := consumer.New(src, nil, consumer.Config{Name: "x"}); err != nil {
		return err
	}
	return d.Ack(ctx)
}
