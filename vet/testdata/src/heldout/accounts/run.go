package accounts

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/accounts/mail"
)

// Run consumes sign-ups.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, mcfg mail.Config) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "users.signed_up", "accounts")
	if err != nil {
		return err
	}
	p := &Provisioner{mail: mail.NewSender(mcfg)}
	c, err := consumer.New(src, p.Handler(), consumer.Config{Name: "accounts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
