// Package rewards runs two consumers off RabbitMQ: referral sign-ups credit
// the referrer, and streak events unlock badges.
package rewards

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
	AMQP string
	Pool *pgxpool.Pool
}

// Run runs both consumers until ctx ends or one fails.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.AMQP)
	if err != nil {
		return err
	}
	referrals, err := b.Source(ctx, "signups", "rewards-referrals")
	if err != nil {
		return err
	}
	streaks, err := b.Source(ctx, "streaks", "rewards-badges")
	if err != nil {
		return err
	}

	common := []consumer.Middleware{middleware.Logging()}

	credit := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var s struct {
			Referrer string `json:"referrer"`
		}
		if err := json.Unmarshal(msg.Body, &s); err != nil || s.Referrer == "" {
			return nil // not a referral
		}
		_, err := tx.Exec(ctx, `UPDATE members SET credit_cents = credit_cents + 500 WHERE id = $1`, s.Referrer)
		return err
	})
	badge := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var s struct {
			Member string `json:"member"`
			Days   int    `json:"days"`
		}
		if err := json.Unmarshal(msg.Body, &s); err != nil {
			return consumer.Permanent(err)
		}
		if s.Days < 30 {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO badges (member_id, badge) VALUES ($1, 'streak-30')`, s.Member)
		return err
	})

	c1, err := consumer.New(referrals, credit, consumer.Config{Name: "rewards-referrals"}, append(common, middleware.Idempotency(st))...)
	if err != nil {
		return err
	}
	c2, err := consumer.New(streaks, badge, consumer.Config{Name: "rewards-badges"}, common...) // want "."
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c1.Run(gctx) })
	g.Go(func() error { return c2.Run(gctx) })
	return g.Wait()
}
