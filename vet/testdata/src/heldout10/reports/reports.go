// Package reports builds daily sales rows from sale events on RabbitMQ. The
// service owns its tables: it creates them at start and prunes old days in
// the background.
package reports

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	AMQP      string
	Pool      *pgxpool.Pool
	KeepDays  int
	PruneEach time.Duration
	Log       *slog.Logger
}

// Run consumes sales until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	pool := cfg.Pool
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS daily_sales (day date, store text, cents bigint, n int, PRIMARY KEY (day, store))`); err != nil {
		return err
	}

	go func() {
		t := time.NewTicker(cfg.PruneEach)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := pool.Exec(ctx, `DELETE FROM daily_sales WHERE day < current_date - $1::int`, cfg.KeepDays); err != nil {
					cfg.Log.Warn("prune daily_sales", "err", err)
				}
			}
		}
	}()

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.AMQP)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "sales", "daily-reports")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var s struct {
			Store string    `json:"store"`
			Cents int64     `json:"cents"`
			At    time.Time `json:"at"`
		}
		if err := json.Unmarshal(msg.Body, &s); err != nil {
			return consumer.Permanent(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO daily_sales (day, store, cents, n) VALUES ($1::date, $2, $3, 1)
			ON CONFLICT (day, store) DO UPDATE SET cents = daily_sales.cents + EXCLUDED.cents, n = daily_sales.n + 1`, s.At, s.Store, s.Cents)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "daily-reports"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
