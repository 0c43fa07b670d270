// Package billing records charges from usage events.
package billing

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// execer is satisfied by both *pgxpool.Pool and pgx.Tx.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Service charges accounts.
type Service struct {
	ledger execer
	rate   int64
}

// Option configures a Service.
type Option func(*Service)

// WithLedger sets where charges are recorded.
func WithLedger(db execer) Option { return func(s *Service) { s.ledger = db } }

// WithRate sets the price per unit in cents.
func WithRate(cents int64) Option { return func(s *Service) { s.rate = cents } }

// NewService builds a Service from options.
func NewService(opts ...Option) *Service {
	s := &Service{rate: 1}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	units, err := strconv.ParseInt(string(msg.Body), 10, 64)
	if err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO usage (account, units) VALUES ($1, $2)`, msg.Key, units); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if _, err := s.ledger.Exec(ctx, `INSERT INTO charges (account, cents) VALUES ($1, $2)`, msg.Key, units*s.rate); err != nil { // want "pool"
		return fmt.Errorf("charge: %w", err)
	}
	return nil
}

// Run wires the service.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	svc := NewService(WithLedger(pool), WithRate(3))
	src, err := broker.Source(ctx, "usage", "billing")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(svc.handle), consumer.Config{Name: "billing"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
