package timesheets

import (
	"context"

	"example.com/platform"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Run locks approved sheets until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "hr.timesheet-approved", "timesheet-lock")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, approvals{maxOvertime: 40}, consumer.Config{Name: "timesheet-lock"}, platform.Dedupe(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
