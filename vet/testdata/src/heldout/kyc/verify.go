// Package kyc records identity-verification outcomes from the provider.
package kyc

import (
	"context"
	"encoding/json"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Verifier records verification outcomes.
type Verifier struct {
	events publisher
}

type verificationDone struct {
	CustomerID string `json:"customer_id"`
	Outcome    string `json:"outcome"`
	Level      int    `json:"level"`
}

func (v *Verifier) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev verificationDone
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE customers SET kyc_level = $2, kyc_outcome = $3 WHERE id = $1`, ev.CustomerID, ev.Level, ev.Outcome); err != nil {
		return err
	}
	if ev.Outcome != "approved" {
		return nil
	}
	return v.events.Publish("customers.verified", ev.CustomerID, ev) // want "Kafka produce (sarama, behind an interface) inside the transactional handler"
}

// Run consumes kyc.results.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, producer sarama.SyncProducer) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "kyc.results", "kyc")
	if err != nil {
		return err
	}
	v := &Verifier{events: saramaPublisher{producer: producer}}
	c, err := consumer.New(src, postgres.HandlerFunc(v.record), consumer.Config{Name: "kyc"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
