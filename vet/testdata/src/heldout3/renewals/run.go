// Package renewals renews subscriptions and tracks renewal reminders.
package renewals

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"

	"example.com/platform"
)

// Run consumes renewals and reminder receipts until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	dueSrc, err := broker.Source(ctx, "subscriptions.renewal-due", "renewals")
	if err != nil {
		return err
	}
	sentSrc, err := broker.Source(ctx, "notifications.reminder-sent", "renewals-reminders")
	if err != nil {
		return err
	}
	renew, err := consumer.New(dueSrc, renewer{}, consumer.Config{Name: "renewals"}, platform.Dedupe(st))
	if err != nil {
		return err
	}
	reminders, err := consumer.New(sentSrc, &reminderLog{pool: pool}, consumer.Config{
		Name:       "renewals-reminders",
		Duplicates: consumer.AllowDuplicates("monotonic update: reminded_at only moves forward, a redelivery is a no-op"),
	})
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return renew.Run(gctx) })
	g.Go(func() error { return reminders.Run(gctx) })
	return g.Wait()
}
