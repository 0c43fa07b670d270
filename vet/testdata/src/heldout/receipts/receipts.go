// Package receipts e-mails payment receipts. The mail is handed to the
// outbox in the claim's transaction; the mailer service sends it.
package receipts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type paymentSettled struct {
	PaymentID   string `json:"payment_id"`
	Email       string `json:"email"`
	AmountCents int64  `json:"amount_cents"`
}

type mailRequest struct {
	To       string            `json:"to"`
	Template string            `json:"template"`
	Vars     map[string]string `json:"vars"`
}

func sendReceipt(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev paymentSettled
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO receipts (payment_id, email) VALUES ($1, $2)`, ev.PaymentID, ev.Email); err != nil {
		return err
	}
	body, err := json.Marshal(mailRequest{
		To:       ev.Email,
		Template: "receipt",
		Vars:     map[string]string{"amount": fmt.Sprintf("%.2f", float64(ev.AmountCents)/100)},
	})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "mailer.requests", &consumer.Message{ID: "receipt-" + ev.PaymentID, Key: ev.Email, Body: body})
}

// Run runs the receipts consumer and the outbox relay that publishes its
// mail requests.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()
	src, err := broker.Source(ctx, "payments.settled", "receipts")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(sendReceipt), consumer.Config{Name: "receipts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
