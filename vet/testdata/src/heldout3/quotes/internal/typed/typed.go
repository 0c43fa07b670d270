// Package typed adapts handlers of decoded events to oncely's transactional
// handler.
package typed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Handler decodes each message body as JSON into a T and calls fn with the
// claim's transaction. A body that does not decode is dead-lettered.
func Handler[T any](fn func(ctx context.Context, tx pgx.Tx, v T) error) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var v T
		if err := json.Unmarshal(msg.Body, &v); err != nil {
			return consumer.Permanent(fmt.Errorf("typed: decode %T: %w", v, err))
		}
		return fn(ctx, tx, v)
	})
}
