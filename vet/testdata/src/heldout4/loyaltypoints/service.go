package loyaltypoints

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Service is the loyalty consumer process.
type Service struct {
	Pool   *pgxpool.Pool
	CRM    *sql.DB
	Broker adapters.Broker
}

// Run consumes purchases until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	earner, err := NewEarner(ctx, s.CRM, 10)
	if err != nil {
		return err
	}
	st, err := postgres.New(s.Pool)
	if err != nil {
		return err
	}
	src, err := s.Broker.Source(ctx, "pos.purchase-completed", "loyalty-earn")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, earner, consumer.Config{Name: "loyalty-earn"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
