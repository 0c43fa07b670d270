// Package brewery tracks fermentation batches.
package brewery

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Typed adapts a handler of decoded events to the transactional handler shape.
func Typed[T any](fn func(ctx context.Context, tx pgx.Tx, ev T) error) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var ev T
		if err := json.Unmarshal(msg.Body, &ev); err != nil {
			return consumer.Permanent(err)
		}
		return fn(ctx, tx, ev)
	})
}
