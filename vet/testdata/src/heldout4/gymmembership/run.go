package gymmembership

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/gymmembership/internal/svckit"
	"heldout4/gymmembership/internal/typed"
)

// Run activates memberships until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "sales.membership-sold", "membership-activation")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	a := &activator{planMonths: map[string]int{"monthly": 1, "annual": 12, "student": 6}}
	c, err := svckit.NewConsumer(src, postgres.HandlerFunc(typed.Func(a.activate)), "membership-activation",
		svckit.WithStore(st), svckit.WithConcurrency(4))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
