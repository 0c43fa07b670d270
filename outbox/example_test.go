package outbox_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	pgstore "github.com/oncely/oncely/store/postgres"
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

// A batch handler books its payments with one statement and sends one
// receipt per payment with one SendBatch, each caused by its payment, so
// each receipt's ID is the one a Send in a single-payment handler derives.
func ExampleSendBatch() {
	book := pgstore.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		ids := make([]string, len(msgs))
		bodies := make([][]byte, len(msgs))
		sends := make([]outbox.Outgoing, len(msgs))
		for i, in := range msgs {
			ids[i], bodies[i] = in.ID, in.Body
			sends[i] = outbox.Outgoing{Destination: "receipts", Message: &consumer.Message{Key: in.Key, Body: in.Body}, Cause: in}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO ledger (payment_id, body) SELECT * FROM unnest($1::text[], $2::bytea[])", ids, bodies); err != nil {
			return err
		}
		return outbox.SendBatch(ctx, tx, sends)
	})
	_ = book // run it as Example runs its handler; consumer.Config.BatchSize bounds a batch
}
