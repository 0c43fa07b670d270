// Package signup provisions workspaces for new accounts from a Redis stream.
// The handler chain is assembled once and shared by the main consumer and the
// replay consumer the on-call runs after an incident.
package signup

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	StreamURL string
	Pool      *pgxpool.Pool
	// Replay, when set, consumes the replay stream instead of the live one.
	Replay bool
}

// Run consumes sign-ups until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.StreamURL)
	if err != nil {
		return err
	}

	provision := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var a struct {
			Account string `json:"account"`
			Slug    string `json:"slug"`
		}
		if err := json.Unmarshal(msg.Body, &a); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO workspaces (slug, owner_account) VALUES ($1, $2)`, a.Slug, a.Account); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO workspace_members (slug, account_id, role) VALUES ($1, $2, 'owner')`, a.Slug, a.Account)
		return err
	})
	chain := consumer.Chain(provision, middleware.Idempotency(st))

	source, name := "signups", "workspace-provisioner"
	if cfg.Replay {
		source = "signups.replay"
	}
	src, err := b.Source(ctx, source, name)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, chain, consumer.Config{Name: name}, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
