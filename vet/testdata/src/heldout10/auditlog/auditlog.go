// Package auditlog stores admin actions from SQS. Search-index updates of the
// audit view are coalesced and flushed every few seconds.
package auditlog

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
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
	SQS   string
	Pool  *pgxpool.Pool
	Flush time.Duration
	Log   *slog.Logger
}

// Run consumes admin actions until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	var (
		mu      sync.Mutex
		pending []func() error
		start   sync.Once
	)
	flush := func() {
		mu.Lock()
		batch := pending
		pending = nil
		mu.Unlock()
		for _, f := range batch {
			if err := f(); err != nil {
				cfg.Log.Warn("audit view refresh", "err", err)
			}
		}
	}

	refresh := func(ctx context.Context, tx pgx.Tx, actor string) error {
		_, err := tx.Exec(ctx, `UPDATE audit_by_actor SET actions = (SELECT count(*) FROM audit WHERE actor = $1) WHERE actor = $1`, actor)
		return err
	}

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.SQS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "admin-actions", "auditlog")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		start.Do(func() {
			go func() {
				t := time.NewTicker(cfg.Flush)
				defer t.Stop()
				for range t.C {
					flush()
				}
			}()
		})
		var a struct {
			Actor  string `json:"actor"`
			Action string `json:"action"`
			Target string `json:"target"`
		}
		if err := json.Unmarshal(msg.Body, &a); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit (actor, action, target, message_id) VALUES ($1, $2, $3, $4)`, a.Actor, a.Action, a.Target, msg.ID); err != nil {
			return err
		}
		mu.Lock()
		pending = append(pending, func() error { return refresh(ctx, tx, a.Actor) }) // want "."
		mu.Unlock()
		return nil
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "auditlog"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
