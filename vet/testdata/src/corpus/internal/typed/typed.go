// Package typed is a team's generic wrapper: handlers of decoded payloads.
package typed

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Func adapts a handler of T to the function postgres.HandlerFunc takes.
func Func[T any](f func(ctx context.Context, tx pgx.Tx, v T) error) func(context.Context, pgx.Tx, *consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
		var v T
		if err := json.Unmarshal([]byte(m.ID), &v); err != nil {
			return err
		}
		return f(ctx, tx, v)
	}
}
