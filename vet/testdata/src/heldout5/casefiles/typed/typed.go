// Package typed decodes JSON message bodies for transactional handlers.
package typed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Func adapts a handler of decoded values to a claimed Postgres handler; a
// body that does not decode is a permanent error.
func Func[T any](f func(ctx context.Context, tx pgx.Tx, v T) error) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var v T
		if err := json.Unmarshal(msg.Body, &v); err != nil {
			return consumer.Permanent(fmt.Errorf("decode %T: %w", v, err))
		}
		return f(ctx, tx, v)
	})
}
