// Package alerts e-mails metric threshold alerts.
package alerts

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run queues alerts from the monitoring topic and sends them until ctx is
// done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, nc *nats.Conn, smtpAddr, from string, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "monitoring.threshold-crossed", "alerts")
	if err != nil {
		return err
	}
	s := &sender{pool: pool, nc: nc, smtpAddr: smtpAddr, from: from, log: log}
	go s.run(ctx)
	c, err := consumer.New(src, postgres.HandlerFunc(queueAlert), consumer.Config{Name: "alerts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
