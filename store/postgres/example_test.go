package postgres_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// A handler whose writes commit together with the message's claim: a
// redelivered payment is skipped instead of being booked twice.
func ExampleHandlerFunc() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://127.0.0.1/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool, "oncely"); err != nil {
		log.Fatal(err)
	}
	s, err := pgstore.New(pool, pgstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)

	book := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := tx.Exec(ctx, "INSERT INTO ledger (payment_id, body) VALUES ($1, $2)", msg.ID, msg.Body)
		return err
	})
	var src consumer.Source // an adapter: kafka, rabbitmq, sqs or memory
	c, err := consumer.New(src, book, consumer.Config{Name: "ledger"}, middleware.Idempotency(s))
	if err != nil {
		log.Fatal(err)
	}
	_ = c.Run(ctx)
}
