// Package accounts opens accounts from sign-up events.
package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/accounts/repo"
)

// SignupHandler opens one account per sign-up.
type SignupHandler struct {
	Accounts *repo.Accounts
}

// Handle runs inside the claim's transaction.
func (h SignupHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("accounts: handler needs the claim's transaction")
	}
	if err := h.Accounts.Create(ctx, tx, msg.Key, msg.Headers["email"]); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	return h.Accounts.TouchLastSeen(ctx, msg.Key) // want "pool"
}

// Run wires the sign-up consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "signups", "accounts")
	if err != nil {
		return err
	}
	h := SignupHandler{Accounts: repo.NewAccounts(pool)}
	c, err := consumer.New(src, h, consumer.Config{Name: "accounts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
