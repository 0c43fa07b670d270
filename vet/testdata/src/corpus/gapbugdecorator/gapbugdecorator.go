// Package gapbugdecorator is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler's port is wired to a logging decorator
// of another package wrapping a repository built on the pool; the write
// through it commits on its own.
package gapbugdecorator

import (
	"context"
	"log/slog"
	"strconv"

	"corpus/internal/decorated"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type service struct{ vehicles decorated.Vehicles }

func newService(vehicles decorated.Vehicles) *service { return &service{vehicles: vehicles} }

func (s *service) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	km, err := strconv.ParseInt(string(m.Body), 10, 64)
	if err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO readings (vehicle, km) VALUES ($1, $2)", m.Key, km); err != nil {
		return err
	}
	return s.vehicles.SetOdometer(ctx, m.Key, km) // want `vehicles.SetOdometer runs outside the claim's transaction`
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool, log *slog.Logger) consumer.Handler {
	vehicles := decorated.Logged(decorated.New(pool), log)
	return postgres.HandlerFunc(newService(vehicles).handle)
}
