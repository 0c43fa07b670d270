// Package wallets credits wallet top-ups.
package wallets

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/wallets/internal/pg"
)

type topUpCaptured struct {
	WalletID  string `json:"wallet_id"`
	PaymentID string `json:"payment_id"`
	Cents     int64  `json:"cents"`
}

func topUp(ctx context.Context, msg *consumer.Message) error {
	var ev topUpCaptured
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if ev.Cents <= 0 {
		return consumer.Permanent(errNonPositive)
	}
	return pg.Credit(ctx, ev.WalletID, ev.PaymentID, ev.Cents) // want "credit written through the global pool behind Idempotency"
}

// Main sets up the pool and consumes wallets.topups.
func Main(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	pg.Pool = pool
	claims, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "wallets.topups", "wallets")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, consumer.HandlerFunc(topUp), consumer.Config{Name: "wallets"},
		middleware.Logging(),
		middleware.Idempotency(claims),
	)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
