// Package rewards grants referral rewards.
package rewards

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"

	"heldout/platform/metrics"
)

var granted = metrics.NewCounter("rewards_granted_total")

// Granter credits the referrer when a referred user makes a first purchase.
type Granter struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

type firstPurchase struct {
	UserID     string `json:"user_id"`
	ReferrerID string `json:"referrer_id"`
}

// Handle credits the referrer's wallet.
func (g *Granter) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev firstPurchase
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if ev.ReferrerID == "" {
		return nil
	}
	if _, err := g.pool.Exec(ctx,
		`UPDATE wallets SET balance_cents = balance_cents + 500 WHERE user_id = $1`, ev.ReferrerID); err != nil {
		return fmt.Errorf("credit %s: %w", ev.ReferrerID, err)
	}
	granted.Inc("referral")
	return nil
}

// Run consumes first purchases.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	src, err := broker.Source(ctx, "purchases.first", "rewards")
	if err != nil {
		return err
	}
	g := &Granter{pool: pool, log: log}
	c, err := consumer.New(src, g, consumer.Config{Name: "rewards", Concurrency: 4}, middleware.Logging()) // want "no idempotency and no opt-out"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
