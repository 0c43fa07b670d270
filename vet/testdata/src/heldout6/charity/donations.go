// Package charity books donations and thanks the donors.
package charity

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/charity/receipts"
)

type donation struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	AmountCts int64  `json:"amount_cents"`
	Campaign  string `json:"campaign"`
}

type donationHandler struct {
	mail *receipts.Mailer
}

func (h donationHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("charity: claim transaction missing")
	}
	var d donation
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO donations (id, campaign, amount_cents) VALUES ($1, $2, $3)`, d.ID, d.Campaign, d.AmountCts); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE campaigns SET raised_cents = raised_cents + $2 WHERE id = $1`, d.Campaign, d.AmountCts); err != nil {
		return err
	}
	return h.mail.Send(d.Email, d.ID, d.AmountCts) // want "e-mail sent inside transactional handler"
}

// Run starts the donations consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool, mail *receipts.Mailer) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, donationHandler{mail: mail}, consumer.Config{Name: "donations"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
