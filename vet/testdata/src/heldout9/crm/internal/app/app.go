// Package app wires the CRM's consumers.
package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/crm/internal/contacts"
	"heldout9/crm/internal/deals"
)

// App is the CRM's consumer process.
type App struct {
	Pool   *pgxpool.Pool
	Broker adapters.Broker
	Log    *slog.Logger
}

func (a *App) slow(threshold time.Duration) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			start := time.Now()
			defer func() {
				if d := time.Since(start); d > threshold {
					a.Log.Warn("slow message", "id", m.ID, "took", d)
				}
			}()
			return next.Handle(ctx, m)
		})
	}
}

// Start builds and runs the consumers.
func (a *App) Start(ctx context.Context) error {
	st, err := postgres.New(a.Pool)
	if err != nil {
		return err
	}
	base := []consumer.Middleware{middleware.Logging(), a.slow(time.Second)}
	deduped := append(base, middleware.Idempotency(st))

	upSrc, err := a.Broker.Source(ctx, "contacts.upserted", "crm")
	if err != nil {
		return err
	}
	up, err := consumer.New(upSrc, postgres.HandlerFunc(contacts.Upsert), consumer.Config{Name: "crm-contacts"}, deduped...)
	if err != nil {
		return err
	}
	mergeSrc, err := a.Broker.Source(ctx, "contacts.merged", "crm")
	if err != nil {
		return err
	}
	merge, err := consumer.New(mergeSrc, postgres.HandlerFunc(contacts.Merge), consumer.Config{Name: "crm-merge"}, deduped...)
	if err != nil {
		return err
	}
	dealSrc, err := a.Broker.Source(ctx, "deals.moved", "crm")
	if err != nil {
		return err
	}
	var stages deals.Stages
	moved, err := consumer.New(dealSrc, postgres.HandlerFunc(stages.Moved), consumer.Config{Name: "crm-deals", Concurrency: 4}, base...) // want "."
	if err != nil {
		return err
	}
	for _, c := range []*consumer.Consumer{up, merge, moved} {
		go c.Run(ctx)
	}
	return nil
}
