// Package gapokcontainerchain is a correct corpus handler package (see
// vet/corpus_test.go): the service keeps its middleware chain in a
// dependency container; NewServices starts it with logging, and
// WithClaims appends the Postgres idempotency middleware, so the chain
// the consumer takes from the container deduplicates.
package gapokcontainerchain

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Services is the dependency container.
type Services struct {
	DB    *pgxpool.Pool
	Log   *slog.Logger
	Chain []consumer.Middleware
}

// NewServices builds the container with the service's base chain.
func NewServices(db *pgxpool.Pool, log *slog.Logger) *Services {
	return &Services{DB: db, Log: log, Chain: []consumer.Middleware{middleware.Logging()}}
}

// WithClaims adds the Postgres claim to the container's chain.
func (s *Services) WithClaims() error {
	st, err := postgres.New(s.DB)
	if err != nil {
		return err
	}
	s.Chain = append(s.Chain, middleware.Idempotency(st))
	return nil
}

func award(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "UPDATE members SET points = points + 10 WHERE id = $1", m.Key)
	return err
}

// Start runs the points consumer.
func Start(ctx context.Context, src consumer.Source, s *Services) error {
	c, err := consumer.New(src, postgres.HandlerFunc(award), consumer.Config{Name: "points"}, s.Chain...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
