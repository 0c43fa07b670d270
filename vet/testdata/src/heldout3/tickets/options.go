package tickets

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Option configures the ticket service.
type Option func(*service)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(s *service) { s.log = l } }

// WithSLA sets the first-response target; the default is 4 hours.
func WithSLA(d time.Duration) Option { return func(s *service) { s.sla = d } }

type service struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	sla  time.Duration
}

func newService(pool *pgxpool.Pool, opts ...Option) *service {
	s := &service{pool: pool, log: slog.New(slog.DiscardHandler), sla: 4 * time.Hour}
	for _, o := range opts {
		o(s)
	}
	return s
}
