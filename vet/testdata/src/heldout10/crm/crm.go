// Package crm runs the CRM sync consumers from Kafka, one per topic, from a
// table. Contact and deal events change rows and are claimed; the ping topic
// only records that the upstream is alive.
package crm

import (
	"context"
	"encoding/json"
	"time"

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
	Kafka string
	Pool  *pgxpool.Pool
	// OnPing is told each time the upstream's ping arrives; nil ignores it.
	OnPing func(at time.Time)
}

// Run runs every consumer until ctx ends or one fails.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Kafka)
	if err != nil {
		return err
	}

	routes := []struct {
		topic, name string
		handler     consumer.Handler
		dupesOK     string // non-empty: runs without claims, for this reason
	}{
		{"crm.contacts", "crm-contacts", postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
			var c struct{ ID, Email, Name string }
			if err := json.Unmarshal(msg.Body, &c); err != nil {
				return consumer.Permanent(err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO contacts (id, email, name) VALUES ($1, $2, $3)
				ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name`, c.ID, c.Email, c.Name)
			return err
		}), ""},
		{"crm.deals", "crm-deals", postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
			var d struct {
				ID, Contact, Stage string
				Cents              int64
			}
			if err := json.Unmarshal(msg.Body, &d); err != nil {
				return consumer.Permanent(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO deal_history (deal_id, stage, message_id) VALUES ($1, $2, $3)`, d.ID, d.Stage, msg.ID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE deals SET stage = $2, cents = $3 WHERE id = $1`, d.ID, d.Stage, d.Cents)
			return err
		}), ""},
		{"crm.ping", "crm-ping", consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			if cfg.OnPing != nil {
				cfg.OnPing(time.Now())
			}
			return nil
		}), "only reports upstream liveness to a gauge"},
	}

	g, gctx := errgroup.WithContext(ctx)
	for _, r := range routes {
		src, err := b.Source(ctx, r.topic, r.name)
		if err != nil {
			return err
		}
		ccfg := consumer.Config{Name: r.name}
		mws := []consumer.Middleware{middleware.Logging()}
		if r.dupesOK != "" {
			ccfg.Duplicates = consumer.AllowDuplicates(r.dupesOK)
		} else {
			mws = append(mws, middleware.Idempotency(st))
		}
		c, err := consumer.New(src, r.handler, ccfg, mws...)
		if err != nil {
			return err
		}
		g.Go(func() error { return c.Run(gctx) })
	}
	return g.Wait()
}
