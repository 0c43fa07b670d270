// Package typed decodes a message's JSON body before a transactional handler.
package typed

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Func is a handler of decoded events of type T.
type Func[T any] func(ctx context.Context, tx pgx.Tx, id string, v T) error

// Handler returns fn behind a JSON decoder; undecodable bodies are permanent.
func Handler[T any](fn Func[T]) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var v T
		if err := json.Unmarshal(msg.Body, &v); err != nil {
			return consumer.Permanent(err)
		}
		return fn(ctx, tx, msg.ID, v)
	})
}
