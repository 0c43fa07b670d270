// Package mailer records refunds from SQS and mails the customer a receipt.
package mailer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/smtp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	QueueURL string // sqs://eu-central-1
	DB       *pgxpool.Pool
	SMTPAddr string
	From     string
	Log      *slog.Logger
}

// Run consumes refunds until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.DB)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.QueueURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "refunds", "refund-receipts")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) (err error) {
		var r struct {
			Order string `json:"order"`
			Email string `json:"email"`
			Cents int64  `json:"cents"`
		}
		if err := json.Unmarshal(msg.Body, &r); err != nil {
			return consumer.Permanent(err)
		}
		// The receipt goes out once the refund is recorded: the deferred
		// send runs only when the handler returns without error.
		defer func() {
			if err != nil {
				return
			}
			body := fmt.Sprintf("Subject: Your refund\r\n\r\nWe refunded %d.%02d EUR for order %s.\r\n", r.Cents/100, r.Cents%100, r.Order)
			if sendErr := smtp.SendMail(cfg.SMTPAddr, nil, cfg.From, []string{r.Email}, []byte(body)); sendErr != nil { // want "."
				cfg.Log.Warn("refund receipt not sent", "order", r.Order, "err", sendErr)
			}
		}()
		_, err = tx.Exec(ctx, `INSERT INTO refunds (order_id, cents, message_id) VALUES ($1, $2, $3)`, r.Order, r.Cents, msg.ID)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "refund-receipts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
