// Package accounts provisions accounts for new sign-ups.
package accounts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout/accounts/mail"
)

// Provisioner creates the account and greets the user.
type Provisioner struct {
	mail *mail.Sender
}

type signedUp struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	Plan   string `json:"plan"`
}

// Handler returns the sign-up handler.
func (p *Provisioner) Handler() consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var ev signedUp
		if err := json.Unmarshal(msg.Body, &ev); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx,
			`INSERT INTO accounts (user_id, email, plan) VALUES ($1, $2, $3)`, ev.UserID, ev.Email, ev.Plan); err != nil {
			return fmt.Errorf("account: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO quotas (user_id, plan) VALUES ($1, $2)`, ev.UserID, ev.Plan); err != nil {
			return fmt.Errorf("quota: %w", err)
		}
		return p.mail.Send(ev.Email, "Welcome aboard", "Hi "+ev.Name+", your account is ready.") // want "e-mail sent inside the transactional handler"
	})
}
