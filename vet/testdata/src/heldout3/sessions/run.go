// Package sessions tracks user sessions from client activity events.
package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// FlushEvery is how often the coalesced last-seen writes are applied.
const FlushEvery = 5 * time.Second

// Run consumes activity until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "web.activity", "sessions")
	if err != nil {
		return err
	}
	t := &tracker{lastSeen: &coalescer{}}
	go func() {
		tick := time.NewTicker(FlushEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := t.lastSeen.Flush(ctx); err != nil {
					log.Warn("sessions: flush last-seen", "err", err)
				}
			}
		}
	}()
	c, err := consumer.New(src, postgres.HandlerFunc(t.onActivity), consumer.Config{Name: "sessions", Concurrency: 32},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
