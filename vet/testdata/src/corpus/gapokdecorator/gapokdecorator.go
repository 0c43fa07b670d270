// Package gapokdecorator is a correct corpus handler package (see
// vet/corpus_test.go): the handler reads through a logging decorator of
// a repository built on the pool (a SELECT: nothing commits), and writes
// through the same decorator built on its transaction.
package gapokdecorator

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

type service struct {
	vehicles decorated.Vehicles
	log      *slog.Logger
}

func newService(vehicles decorated.Vehicles, log *slog.Logger) *service {
	return &service{vehicles: vehicles, log: log}
}

func (s *service) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	km, err := strconv.ParseInt(string(m.Body), 10, 64)
	if err != nil {
		return consumer.Permanent(err)
	}
	last, err := s.vehicles.Odometer(ctx, m.Key)
	if err != nil || km <= last {
		return err
	}
	return decorated.Logged(decorated.New(tx), s.log).SetOdometer(ctx, m.Key, km)
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool, log *slog.Logger) consumer.Handler {
	vehicles := decorated.Logged(decorated.New(pool), log)
	return postgres.HandlerFunc(newService(vehicles, log).handle)
}
