// Package gapbugoptioneffect is a corpus handler package with a bug (see
// vet/corpus_test.go): the fraud checker's alerter is an interface field of
// its options, set by the functional option UseAlerter to a wrapper over a
// Redis client; the handler publishes the alert through it inside the
// claim's transaction.
package gapbugoptioneffect

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
	Alert(ctx context.Context, account string) error
}

type redisAlerter struct{ rdb *redis.Client }

func (r redisAlerter) Alert(ctx context.Context, account string) error {
	return r.rdb.Publish(ctx, "fraud-alerts", account).Err()
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
	return f.cfg.alerts.Alert(ctx, m.Key) // want `the Redis command Publish is an effect outside the database`
}

// Start wires the fraud check behind the Postgres claim.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, rdb *redis.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	f := newFraudCheck(useAlerter(redisAlerter{rdb: rdb}))
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
