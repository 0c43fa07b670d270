// Package lastbugpubsub is a held-out corpus package (fourth round): a
// Google Pub/Sub publish inside the claim's transaction.
package lastbugpubsub

import (
	"context"

	"cloud.google.com/go/pubsub"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ topic *pubsub.Topic }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE users SET verified = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	_, err := h.topic.Publish(ctx, &pubsub.Message{Data: []byte(m.ID)}).Get(ctx) // want `outside the database`
	return err
}

func New(c *pubsub.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{topic: c.Topic("users.verified")}).handle)
}
