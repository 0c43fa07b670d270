// Package sessions closes user sessions on logout events from NATS: the
// session row and the device row are updated side by side.
package sessions

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Config wires the service.
type Config struct {
	NATS string
	Pool *pgxpool.Pool
}

// Run consumes logout events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "auth.logout", "sessions")
	if err != nil {
		return err
	}

	touchDevice := func(ctx context.Context, tx pgx.Tx, device string) error {
		_, err := tx.Exec(ctx, `UPDATE devices SET last_logout = now() WHERE id = $1`, device)
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var ev struct {
			Session string `json:"session"`
			Device  string `json:"device"`
		}
		if err := json.Unmarshal(msg.Body, &ev); err != nil {
			return consumer.Permanent(err)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return touchDevice(gctx, tx, ev.Device) }) // want "."
		if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL`, ev.Session); err != nil {
			_ = g.Wait()
			return err
		}
		return g.Wait()
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "sessions"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
