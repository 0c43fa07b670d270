// Package gapbugcontainerchain is a corpus handler package with a bug
// (see vet/corpus_test.go): the service keeps its middleware chain in a
// dependency container, built in NewServices with logging and a local
// metrics middleware only; the consumer takes the chain from the container
// and has no idempotency and no opt-out, while its handler counts points.
package gapbugcontainerchain

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Services is the dependency container.
type Services struct {
	DB    *pgxpool.Pool
	Log   *slog.Logger
	Chain []consumer.Middleware
}

// NewServices builds the container with the service's chain.
func NewServices(db *pgxpool.Pool, log *slog.Logger) *Services {
	s := &Services{DB: db, Log: log}
	s.Chain = []consumer.Middleware{middleware.Logging()}
	s.Chain = append(s.Chain, latency(log))
	return s
}

func latency(log *slog.Logger) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, m)
			log.Debug("handled", "id", m.ID, "took", time.Since(start))
			return err
		})
	}
}

type points struct{ db *pgxpool.Pool }

func (p points) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := p.db.Exec(ctx, "UPDATE members SET points = points + 10 WHERE id = $1", m.Key)
	return err
}

// Start runs the points consumer.
func Start(ctx context.Context, src consumer.Source, s *Services) error {
	c, err := consumer.New(src, points{db: s.DB}, consumer.Config{Name: "points"}, s.Chain...) // want `without an idempotency middleware`
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
