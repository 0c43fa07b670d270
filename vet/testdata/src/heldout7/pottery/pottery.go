// Package pottery takes studio class bookings and tells the booking site
// about them through its webhook.
package pottery

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Config configures the studio's consumers.
type Config struct {
	// WebhookURL receives booking confirmations; required.
	WebhookURL string
	// Confirmations is the topic the outbox relay publishes confirmations
	// to and the webhook sender reads; default "pottery.confirmations".
	Confirmations string
}

// Run books classes, relays confirmations and posts them to the booking
// site until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.WebhookURL == "" {
		return fmt.Errorf("pottery: WebhookURL is required")
	}
	if cfg.Confirmations == "" {
		cfg.Confirmations = "pottery.confirmations"
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	bookingsSrc, err := broker.Source(ctx, "pottery.bookings", "pottery-bookings")
	if err != nil {
		return err
	}
	confirmSrc, err := broker.Source(ctx, cfg.Confirmations, "pottery-webhook")
	if err != nil {
		return err
	}
	studio := &Studio{confirmations: cfg.Confirmations}
	bookings, err := consumer.New(bookingsSrc, postgres.BatchHandlerFunc(studio.bookBatch),
		consumer.Config{Name: "pottery-bookings"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	hook := &webhook{url: cfg.WebhookURL, client: &http.Client{Timeout: 10 * time.Second}, log: log}
	webhooks, err := consumer.New(confirmSrc, hook, consumer.Config{
		Name:       "pottery-webhook",
		Duplicates: consumer.AllowDuplicates("the booking site dedupes on the Idempotency-Key header, our message ID"),
	})
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return relay.Run(gctx) })
	g.Go(func() error { return bookings.Run(gctx) })
	g.Go(func() error { return webhooks.Run(gctx) })
	return g.Wait()
}
