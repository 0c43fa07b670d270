package kiosk

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// App is the kiosk ticket service.
type App struct {
	Pool      *pgxpool.Pool
	BrokerURL string
	Stores    string
	Log       *slog.Logger
}

// Run consumes kiosk orders until ctx ends.
func (a *App) Run(ctx context.Context) error {
	b, err := adapters.Open(ctx, a.BrokerURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "kiosk.orders", "kitchen-tickets")
	if err != nil {
		return err
	}
	printer := &TicketPrinter{pool: a.Pool}
	c, err := consumer.New(src, printer, consumer.Config{Name: "kitchen-tickets", Concurrency: 4}, pipeline(recoverer(a.Log), storeScoped(strings.Split(a.Stores, ",")...), middleware.Logging())...) // want "no idempotency and no AllowDuplicates"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
