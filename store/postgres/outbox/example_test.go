package outbox_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
	"github.com/oncely/oncely/store/postgres/outbox"
)

// A handler books a payment and sends a follow-up message in the same
// transaction; a relay in the same process publishes it once committed.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://127.0.0.1/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool, "oncely"); err != nil {
		log.Fatal(err)
	}
	broker, err := adapters.Open(ctx, "amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()

	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = relay.Run(ctx) }()

	s, err := pgstore.New(pool, pgstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	book := outbox.Caused(pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		if _, err := tx.Exec(ctx, "INSERT INTO ledger (payment_id, body) VALUES ($1, $2)", msg.ID, msg.Body); err != nil {
			return err
		}
		// No ID: derived from the consumer name, msg.ID and the send's index,
		// so a retried run sends the same IDs.
		return outbox.Send(ctx, tx, "receipts", &consumer.Message{Key: msg.Key, Body: msg.Body})
	}))
	src, err := broker.Source(ctx, "payments", "ledger")
	if err != nil {
		log.Fatal(err)
	}
	c, err := consumer.New(src, book, consumer.Config{Name: "ledger"}, middleware.Idempotency(s))
	if err != nil {
		log.Fatal(err)
	}
	_ = c.Run(ctx)
}
