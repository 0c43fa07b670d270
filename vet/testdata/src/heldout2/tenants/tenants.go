// Package tenants applies plan upgrades.
package tenants

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/tenants/repo"
)

// Upgrader applies plan changes; it runs behind the Postgres claim, and the
// repository's writes join the claim's transaction.
type Upgrader struct {
	tenants *repo.Tenants
}

// Handle changes the tenant's plan unless it already has it.
func (u *Upgrader) Handle(ctx context.Context, msg *consumer.Message) error {
	current, err := u.tenants.Plan(ctx, msg.Key)
	if err != nil {
		return fmt.Errorf("current plan: %w", err)
	}
	want := string(msg.Body)
	if current == want {
		return nil
	}
	return u.tenants.SetPlan(ctx, msg.Key, want)
}

// Run wires the upgrader.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "plans.upgraded", "upgrader")
	if err != nil {
		return err
	}
	var h consumer.Handler = &Upgrader{tenants: repo.New(pool)}
	c, err := consumer.New(src, h, consumer.Config{Name: "upgrader"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
