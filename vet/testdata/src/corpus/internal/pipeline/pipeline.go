// Package pipeline is a platform team's generic wrapper: it decodes a
// payload of type T and runs the service's function in the claim's
// transaction.
package pipeline

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Typed returns a handler running fn on each decoded payload.
func Typed[T any](fn func(ctx context.Context, tx pgx.Tx, v T) error) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
		var v T
		if err := json.Unmarshal([]byte(m.ID), &v); err != nil {
			return consumer.Permanent(err)
		}
		return fn(ctx, tx, v)
	})
}
