package concierge

import (
	"context"
	"net/smtp"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/concierge/notify"
)

// Main wires the concierge desk to NATS JetStream.
func Main(ctx context.Context, pool *pgxpool.Pool) error {
	auth := smtp.PlainAuth("", os.Getenv("SMTP_USER"), os.Getenv("SMTP_PASSWORD"), "relay.hotel.internal")
	desk := NewDesk(notify.NewSMTP("relay.hotel.internal:587", "concierge@hotel.example", auth))

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "nats://nats-1:4222,nats-2:4222")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "frontdesk", "concierge")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(desk.Dispatch), consumer.Config{Name: "concierge"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
