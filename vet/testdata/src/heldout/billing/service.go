// Package billing issues invoices for placed orders.
package billing

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/billing/internal/invoices"
)

// Service is the billing worker.
type Service struct {
	invoices *invoices.Repository
	log      *slog.Logger
}

// NewService wires the billing worker to pool.
func NewService(pool *pgxpool.Pool, log *slog.Logger) *Service {
	return &Service{invoices: invoices.NewRepository(pool), log: log}
}

// Run consumes orders.placed until ctx ends.
func (s *Service) Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("claims store: %w", err)
	}
	src, err := broker.Source(ctx, "orders.placed", "billing")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.handleOrderPlaced),
		consumer.Config{Name: "billing", Concurrency: 8},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
