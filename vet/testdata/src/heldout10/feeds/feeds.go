// Package feeds fans social posts from NATS out to followers' timelines, a
// batch at a time, and queues a push notification per mention through the
// outbox.
package feeds

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	NATS string
	Pool *pgxpool.Pool
}

type post struct {
	ID       string   `json:"id"`
	Author   string   `json:"author"`
	Mentions []string `json:"mentions"`
}

// Run consumes posts until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "posts.created", "timeline-fanout")
	if err != nil {
		return err
	}

	var publish func(ctx context.Context, tx pgx.Tx, sends []outbox.Outgoing) error = outbox.SendBatch

	fanout := postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		var postIDs, authors []string
		var sends []outbox.Outgoing
		for _, m := range msgs {
			var p post
			if err := json.Unmarshal(m.Body, &p); err != nil {
				continue
			}
			postIDs = append(postIDs, p.ID)
			authors = append(authors, p.Author)
			for _, who := range p.Mentions {
				body, _ := json.Marshal(map[string]string{"user": who, "post": p.ID, "by": p.Author})
				sends = append(sends, outbox.Outgoing{
					Destination: "push.mentions",
					Message:     &consumer.Message{ID: m.ID + ":" + who, Key: who, Body: body},
				})
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO timeline (user_id, post_id)
			SELECT f.follower_id, p.id FROM unnest($1::text[], $2::text[]) AS p(id, author)
			JOIN follows f ON f.followee_id = p.author
			ON CONFLICT DO NOTHING`, postIDs, authors); err != nil {
			return err
		}
		return publish(ctx, tx, sends)
	})

	c, err := consumer.New(src, fanout, consumer.Config{Name: "timeline-fanout", Concurrency: 4}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
