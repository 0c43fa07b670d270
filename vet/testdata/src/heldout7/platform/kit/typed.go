// Package kit is the platform team's helper package for consumers: typed
// handlers, the standard middleware chain and start-up configuration.
package kit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// TxFunc is a transactional handler for a decoded payload of type T.
type TxFunc[T any] func(ctx context.Context, tx pgx.Tx, v T) error

// Typed decodes each message's body as JSON into T and calls fn with the
// claim's transaction. A body that does not decode is a permanent failure.
func Typed[T any](fn TxFunc[T]) func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var v T
		if err := json.Unmarshal(msg.Body, &v); err != nil {
			return consumer.Permanent(fmt.Errorf("decode %s: %w", msg.ID, err))
		}
		return fn(ctx, tx, v)
	}
}

// Decode decodes a message body as JSON into T; a body that does not
// decode is a permanent failure.
func Decode[T any](msg *consumer.Message) (T, error) {
	var v T
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return v, consumer.Permanent(fmt.Errorf("decode %s: %w", msg.ID, err))
	}
	return v, nil
}
