// Package settlelib settles deliveries but builds no consumer (an adapter
// of another module): settle leaves it alone.
package settlelib

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

func ack(ctx context.Context, d consumer.Delivery) error { return d.Ack(ctx) }
