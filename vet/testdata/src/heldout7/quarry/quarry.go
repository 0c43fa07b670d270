// Package quarry schedules blasts and notifies the neighbours registered
// near each bench.
package quarry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Option configures the blast planner.
type Option func(*Planner)

// WithMailRelay sends neighbour notices through the SMTP relay at addr.
func WithMailRelay(addr, from string) Option {
	return func(p *Planner) { p.notices = smtpNotifier{addr: addr, from: from} }
}

// Planner books blasts.
type Planner struct {
	notices Notifier
}

// NewPlanner returns a planner; notices are dropped unless an option sets a relay.
func NewPlanner(opts ...Option) *Planner {
	p := &Planner{notices: logNotifier{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

type blast struct {
	Bench  string    `json:"bench"`
	At     time.Time `json:"at"`
	Charge float64   `json:"charge_kg"`
}

// Handle books one blast in the claim's transaction.
func (p *Planner) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("quarry: handler runs without a claim")
	}
	var b blast
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO blasts (bench, at, charge_kg) VALUES ($1, $2, $3)`, b.Bench, b.At, b.Charge); err != nil {
		return err
	}
	var neighbours []string
	if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(email), '{}') FROM neighbours WHERE bench = $1`, b.Bench).Scan(&neighbours); err != nil {
		return fmt.Errorf("neighbours of %s: %w", b.Bench, err)
	}
	body := fmt.Sprintf("A blast is planned at bench %s on %s.", b.Bench, b.At.Format(time.RFC1123))
	return p.notices.Notify(neighbours, "Blast notice", body) // want "outbox"
}

// Run consumes blast plans until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, relay, from string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "quarry.blasts", "quarry-planner")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, NewPlanner(WithMailRelay(relay, from)), consumer.Config{Name: "quarry-planner"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
