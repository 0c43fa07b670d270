package parcelnotify

import (
	"context"
	"net/smtp"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/parcelnotify/mailer"
)

// Options configures the notifier.
type Options struct {
	BrokerURL string
	SMTPRelay string
	SMTPUser  string
	SMTPPass  string
}

// Run consumes delivery scans until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, o Options) error {
	broker, err := adapters.Open(ctx, o.BrokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "scans.delivered", "parcel-notify")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &handler{mail: mailer.New(o.SMTPRelay, "no-reply@parcels.example", smtp.PlainAuth("", o.SMTPUser, o.SMTPPass, "relay"))}
	c, err := consumer.New(src, postgres.HandlerFunc(h.onDelivered), consumer.Config{Name: "parcel-notify"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
