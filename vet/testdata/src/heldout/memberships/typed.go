package memberships

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// envelope is the shape of every event on the groups topic.
type envelope[T any] struct {
	Type    string `json:"type"`
	Payload T      `json:"payload"`
}

type handlerOf[T any] func(ctx context.Context, tx pgx.Tx, id string, payload T) error

// typed decodes the envelope and calls fn in the claim's transaction.
func typed[T any](fn handlerOf[T]) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var env envelope[T]
		if err := json.Unmarshal(msg.Body, &env); err != nil {
			return consumer.Permanent(err)
		}
		return fn(ctx, tx, msg.ID, env.Payload)
	})
}
