// Package payouts schedules payouts to merchants.
package payouts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/payouts/store"
)

type payout struct {
	Merchant string `json:"merchant"`
	Cents    int64  `json:"cents"`
	Status   string `json:"status"`
}

type scheduler struct {
	payouts *store.Repo[payout]
}

func (s *scheduler) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p payout
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE merchants SET pending_cents = pending_cents + $2 WHERE id = $1`, p.Merchant, p.Cents); err != nil {
		return fmt.Errorf("pending: %w", err)
	}
	p.Status = "scheduled"
	return s.payouts.Put(ctx, msg.ID, p) // want "pool"
}

// Run wires the payout scheduler.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &scheduler{payouts: store.NewRepo[payout](pool, "payouts")}
	src, err := broker.Source(ctx, "settlements", "payouts")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.handle), consumer.Config{Name: "payouts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
