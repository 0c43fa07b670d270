package onboarding

import (
	"context"
	"encoding/json"
	"fmt"

	"heldout3/onboarding/notify"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type userSignedUp struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	Plan   string `json:"plan"`
}

type signupHandler struct {
	mail notify.Mailer
}

func (h *signupHandler) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var u userSignedUp
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO accounts (user_id, plan, status) VALUES ($1, $2, 'trial')`, u.UserID, u.Plan); err != nil {
		return fmt.Errorf("onboarding: create account: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO onboarding_steps (user_id, step) VALUES ($1, 'welcome')`, u.UserID); err != nil {
		return fmt.Errorf("onboarding: first step: %w", err)
	}
	return h.mail.SendWelcome(ctx, u.Email, u.Name) // want "welcome e-mail sent over SMTP inside the transactional handler; use the outbox"
}
