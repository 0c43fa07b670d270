// Package typed decodes a message body into a value before calling a
// transactional handler.
package typed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Func adapts fn, which takes the decoded body, to the shape
// postgres.HandlerFunc takes. A body that does not decode is permanent.
func Func[T any](fn func(ctx context.Context, tx pgx.Tx, v T, msg *consumer.Message) error) func(context.Context, pgx.Tx, *consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var v T
		if err := json.Unmarshal(msg.Body, &v); err != nil {
			return consumer.Permanent(fmt.Errorf("decode %T: %w", v, err))
		}
		return fn(ctx, tx, v, msg)
	}
}
