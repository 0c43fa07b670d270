// Package onboarding creates accounts for new sign-ups.
package onboarding

import (
	"context"
	"net/smtp"

	"heldout3/onboarding/notify"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Settings are read from the environment by main.
type Settings struct {
	SMTPAddr string
	SMTPUser string
	SMTPPass string
	From     string
}

// Run consumes sign-ups until ctx is done.
func Run(ctx context.Context, s Settings, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "identity.user-signed-up", "onboarding")
	if err != nil {
		return err
	}
	h := &signupHandler{
		mail: notify.NewSMTP(s.SMTPAddr, s.From, smtp.PlainAuth("", s.SMTPUser, s.SMTPPass, s.SMTPAddr)),
	}
	c, err := consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "onboarding"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
