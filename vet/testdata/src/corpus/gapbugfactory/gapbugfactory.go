// Package gapbugfactory is a corpus handler package with a bug (see
// vet/corpus_test.go): a method builds the batch handler as a closure over
// the Redis client and the channel name; the closure publishes the new
// scores on Redis after writing them in the claim's transaction.
package gapbugfactory

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
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
			if _, err := tx.Exec(ctx, "UPDATE players SET score = score + $2 WHERE id = $1", m.Key, points); err != nil {
				return err
			}
			if err := lb.rdb.Publish(ctx, channel, m.Key).Err(); err != nil { // want `Redis command Publish is an effect outside the database`
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
