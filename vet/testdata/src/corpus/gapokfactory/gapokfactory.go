// Package gapokfactory is a correct corpus handler package (see
// vet/corpus_test.go): the same batch handler built by a method, queueing
// the score announcements with outbox.Send in the claim's transaction; it
// only reads Redis (the player's display name).
package gapokfactory

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type leaderboard struct {
	rdb *redis.Client
}

func (lb *leaderboard) scoresHandler(channel string) func(context.Context, pgx.Tx, []*consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		for _, m := range msgs {
			points, err := strconv.Atoi(string(m.Body))
			if err != nil {
				return consumer.Permanent(err)
			}
			name, err := lb.rdb.Get(ctx, "player:"+m.Key).Result()
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "UPDATE players SET score = score + $2, name = $3 WHERE id = $1", m.Key, points, name); err != nil {
				return err
			}
			if err := outbox.Send(ctx, tx, channel, &consumer.Message{ID: m.ID, Key: m.Key, Body: m.Body}); err != nil {
				return err
			}
		}
		return nil
	}
}

// Handler returns the leaderboard's batch handler, behind the Postgres
// claim.
func Handler(rdb *redis.Client) consumer.Handler {
	lb := &leaderboard{rdb: rdb}
	return postgres.BatchHandlerFunc(lb.scoresHandler("scores.changed"))
}
