// Package lastokpubsubrelay is a held-out corpus package (fourth round):
// the handler writes an outbox row; a relay publishes it to Pub/Sub.
package lastokpubsubrelay

import (
	"context"

	"cloud.google.com/go/pubsub"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO outbox (topic, body) VALUES ('verified', $1)", m.ID)
	return err
}

var _ = postgres.HandlerFunc(Handle)

// Relay publishes one outbox row and deletes it.
func Relay(ctx context.Context, pool *pgxpool.Pool, topic *pubsub.Topic) error {
	var id int64
	var body []byte
	if err := pool.QueryRow(ctx, "SELECT id, body FROM outbox ORDER BY id LIMIT 1").Scan(&id, &body); err != nil {
		return err
	}
	if _, err := topic.Publish(ctx, &pubsub.Message{Data: body}).Get(ctx); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "DELETE FROM outbox WHERE id = $1", id)
	return err
}
