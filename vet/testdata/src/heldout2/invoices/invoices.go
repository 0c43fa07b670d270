// Package invoices adds lines to open invoices.
package invoices

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Service adds invoice lines.
type Service struct {
	ledger ledger
	limit  int64
}

// Option configures a Service.
type Option func(*Service)

// WithDB sets the querier used outside transactions (reads, reports).
func WithDB(db querier) Option { return func(s *Service) { s.ledger = ledger{db: db} } }

// WithLimit caps an invoice's total in cents; zero means no cap.
func WithLimit(cents int64) Option { return func(s *Service) { s.limit = cents } }

// New builds a Service.
func New(opts ...Option) *Service {
	s := &Service{}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	cents, err := strconv.ParseInt(string(msg.Body), 10, 64)
	if err != nil {
		return consumer.Permanent(err)
	}
	l := s.ledger.withTx(tx)
	total, err := l.total(ctx, msg.Key)
	if err != nil {
		return fmt.Errorf("total: %w", err)
	}
	if s.limit > 0 && total+cents > s.limit {
		return consumer.Permanent(fmt.Errorf("invoice %s over limit", msg.Key))
	}
	return l.addLine(ctx, msg.Key, cents)
}

// Total reports an invoice's total for the API, outside any handler.
func (s *Service) Total(ctx context.Context, invoice string) (int64, error) {
	return s.ledger.total(ctx, invoice)
}

// Run wires the invoice consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	svc := New(WithDB(pool), WithLimit(1_000_000))
	src, err := broker.Source(ctx, "invoice.lines", "invoices")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(svc.handle), consumer.Config{Name: "invoices"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
