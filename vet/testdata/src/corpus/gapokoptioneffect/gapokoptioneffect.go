// Package gapokoptioneffect is a correct corpus handler package (see
// vet/corpus_test.go): the fraud checker's alerter is an interface field
// of its options, set by the functional option UseAlerter; the alerter
// bound there writes the alert into an outbox table on the claim's
// transaction, and the Redis client is only read.
package gapokoptioneffect

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type alerter interface {
	Alert(ctx context.Context, tx pgx.Tx, account string) error
}

type outboxAlerter struct{ rdb *redis.Client }

func (o outboxAlerter) Alert(ctx context.Context, tx pgx.Tx, account string) error {
	channel, err := o.rdb.Get(ctx, "fraud-alerts-channel").Result()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO alerts_outbox (channel, account) VALUES ($1, $2)", channel, account)
	return err
}

type settings struct {
	alerts    alerter
	threshold int
}

type setting func(*settings)

func useAlerter(a alerter) setting {
	return func(s *settings) { s.alerts = a }
}

type fraudCheck struct{ cfg settings }

func newFraudCheck(opts ...setting) *fraudCheck {
	f := &fraudCheck{cfg: settings{threshold: 3}}
	for _, apply := range opts {
		apply(&f.cfg)
	}
	return f
}

func (f *fraudCheck) check(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var strikes int
	if err := tx.QueryRow(ctx, "UPDATE strikes SET n = n + 1 WHERE account = $1 RETURNING n", m.Key).Scan(&strikes); err != nil {
		return err
	}
	if strikes < f.cfg.threshold || f.cfg.alerts == nil {
		return nil
	}
	return f.cfg.alerts.Alert(ctx, tx, m.Key)
}

// Start wires the fraud check behind the Postgres claim.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, rdb *redis.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	f := newFraudCheck(useAlerter(outboxAlerter{rdb: rdb}))
	src, err := broker.Source(ctx, "payments", "fraud")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(f.check), consumer.Config{Name: "fraud"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
