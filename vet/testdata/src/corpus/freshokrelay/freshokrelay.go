// Package freshokrelay is a held-out corpus package (second round): the
// handler writes an outbox row; a relay outside any handler sends it to
// SQS and Redis.
package freshokrelay

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO outbox (topic, body) VALUES ('shipped', $1)", m.ID)
	return err
}

var _ = postgres.HandlerFunc(Handle)

// Relay sends the outbox's rows and deletes them, through the pool.
func Relay(ctx context.Context, pool *pgxpool.Pool, q *sqs.Client, rdb *redis.Client, url string) error {
	rows, err := pool.Query(ctx, "SELECT id, body FROM outbox ORDER BY id LIMIT 100")
	if err != nil {
		return err
	}
	defer rows.Close()
	body := "x"
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
		return err
	}
	if err := rdb.Incr(ctx, "relayed").Err(); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, "DELETE FROM outbox WHERE id = 1")
	return err
}
