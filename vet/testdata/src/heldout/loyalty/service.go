// Package loyalty credits points for completed purchases.
package loyalty

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
)

// Config is the loyalty programme's tuning.
type Config struct {
	PointsPerEuro int64
	Tiers         map[string]int64
}

// Service credits loyalty points.
type Service struct {
	cfg    Config
	ledger pointsLedger
}

// New returns a Service backed by pool.
func New(cfg Config, pool *pgxpool.Pool) *Service {
	if cfg.PointsPerEuro == 0 {
		cfg.PointsPerEuro = 1
	}
	return &Service{cfg: cfg, ledger: pointsLedger{db: pool}}
}

// Consume runs the purchases consumer.
func (s *Service) Consume(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "purchases.completed", "loyalty")
	if err != nil {
		return err
	}
	h := postgres.HandlerFunc(s.onPurchase)
	c, err := consumer.New(src, h, consumer.Config{Name: "loyalty"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

type purchase struct {
	MemberID    string `json:"member_id"`
	AmountCents int64  `json:"amount_cents"`
	Tier        string `json:"tier"`
}

func (s *Service) onPurchase(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p purchase
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	pts := p.AmountCents / 100 * s.cfg.PointsPerEuro
	if bonus, ok := s.cfg.Tiers[p.Tier]; ok {
		pts += bonus
	}
	if _, err := tx.Exec(ctx, `UPDATE loyalty_members SET last_purchase_at = now() WHERE id = $1`, p.MemberID); err != nil {
		return fmt.Errorf("touch member: %w", err)
	}
	return s.ledger.credit(ctx, p.MemberID, "purchase "+msg.ID, pts) // want "ledger bound to the pool"
}
