// Package bookingsaga runs the travel booking saga's payment step.
package bookingsaga

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Deps is the service's dependency container, built once in main.
type Deps struct {
	Pool   *pgxpool.Pool
	Store  *postgres.Store
	Broker adapters.Broker
	Relay  *outbox.Relay
	Log    *slog.Logger
}

// NewDeps wires the container.
func NewDeps(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) (*Deps, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{Schema: "saga"})
	if err != nil {
		return nil, err
	}
	return &Deps{Pool: pool, Store: st, Broker: broker, Relay: relay, Log: slog.Default()}, nil
}

// ExpireStaleSagas abandons sagas stuck for a day; main runs it at start.
func (d *Deps) ExpireStaleSagas(ctx context.Context) error {
	_, err := d.Pool.Exec(ctx, `UPDATE sagas SET state = 'abandoned' WHERE state = 'pending' AND updated_at < now() - interval '1 day'`)
	return err
}
