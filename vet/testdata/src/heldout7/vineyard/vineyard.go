// Package vineyard books grape deliveries at the press house.
package vineyard

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Option configures a PressHouse.
type Option func(*PressHouse)

// WithLogger sets the logger; default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(p *PressHouse) { p.log = l } }

// WithMaxBrix sets the sugar level above which a load is flagged; default 26.
func WithMaxBrix(b float64) Option { return func(p *PressHouse) { p.maxBrix = b } }

// PressHouse receives grape loads.
type PressHouse struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	maxBrix float64
}

// NewPressHouse returns a press house over pool.
func NewPressHouse(pool *pgxpool.Pool, opts ...Option) *PressHouse {
	p := &PressHouse{pool: pool, log: slog.Default(), maxBrix: 26}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Run consumes weighbridge tickets until ctx ends.
func (p *PressHouse) Run(ctx context.Context, broker adapters.Broker) error {
	st, err := postgres.New(p.pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "weighbridge.tickets", "vineyard-press")
	if err != nil {
		return fmt.Errorf("vineyard: %w", err)
	}
	c, err := consumer.New(src, postgres.HandlerFunc(p.receiveLoad), consumer.Config{Name: "vineyard-press", Concurrency: 4},
		middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("vineyard: %w", err)
	}
	return c.Run(ctx)
}
