// Package zoo books animal-encounter sessions and mails each visitor a
// confirmation from a mail queue the bookings fill.
package zoo

import (
	"context"
	"fmt"
	"log/slog"
	"net/smtp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/platform/kit"
)

// Config configures the encounters service.
type Config struct {
	// SMTPAddr is the mail relay; required.
	SMTPAddr string
	// From is the sender address; default "encounters@zoo.example".
	From string
	// PollEvery is how often the mail queue is drained; default 10s.
	PollEvery time.Duration
}

// Run consumes encounter bookings and drains the mail queue until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config, log *slog.Logger) error {
	if cfg.SMTPAddr == "" {
		return fmt.Errorf("zoo: SMTPAddr is required")
	}
	if cfg.From == "" {
		cfg.From = "encounters@zoo.example"
	}
	if cfg.PollEvery == 0 {
		cfg.PollEvery = 10 * time.Second
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "zoo.encounters", "zoo-encounters")
	if err != nil {
		return err
	}
	m := &mailer{pool: pool, send: smtp.SendMail, addr: cfg.SMTPAddr, from: cfg.From, log: log}
	go m.loop(ctx, cfg.PollEvery)

	c, err := consumer.New(src, postgres.HandlerFunc(kit.Typed(bookEncounter)), consumer.Config{Name: "zoo-encounters"},
		kit.Standard(st, log)...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
