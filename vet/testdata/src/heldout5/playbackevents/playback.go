// Package playbackevents counts plays and tells the recommender about them.
package playbackevents

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"
)

type played struct {
	UserID  string `json:"user_id"`
	TitleID string `json:"title_id"`
	Seconds int    `json:"seconds"`
}

// Counter counts completed plays.
type Counter struct {
	recs *kafka.Writer
}

func (c *Counter) onPlayed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p played
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	if p.Seconds < 30 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE titles SET plays = plays + 1 WHERE id = $1`, p.TitleID); err != nil {
		return err
	}
	return c.recs.WriteMessages(ctx, kafka.Message{Key: []byte(p.UserID), Value: msg.Body}) // want "recommender event produced inside the handler"
}

// Run consumes playback events.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c := &Counter{recs: &kafka.Writer{Topic: "recs.plays"}}
	cons, err := consumer.New(src, postgres.HandlerFunc(c.onPlayed), consumer.Config{Name: "playbackevents"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
