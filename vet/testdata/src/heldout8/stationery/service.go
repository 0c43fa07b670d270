package stationery

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Service owns the stock consumers.
type Service struct {
	pool      *pgxpool.Pool
	broker    adapters.Broker
	claims    *postgres.Store
	inventory inventory
}

// NewService opens the broker at url and the claim store.
func NewService(ctx context.Context, pool *pgxpool.Pool, url string) (*Service, error) {
	claims, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	b, err := adapters.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &Service{pool: pool, broker: b, claims: claims}, nil
}

type registration struct {
	source  string
	name    string
	handler consumer.Handler
}

func (s *Service) registrations() []registration {
	return []registration{
		{source: "warehouse.receipts", name: "stock-receipts", handler: postgres.HandlerFunc(s.inventory.Receipt)},
		{source: "warehouse.picks", name: "stock-picks", handler: postgres.HandlerFunc(s.inventory.Pick)},
	}
}

// Start builds one consumer per registration.
func (s *Service) Start(ctx context.Context) ([]*consumer.Consumer, error) {
	var out []*consumer.Consumer
	for _, r := range s.registrations() {
		src, err := s.broker.Source(ctx, r.source, r.name)
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(src, r.handler, consumer.Config{Name: r.name}, middleware.Logging(), middleware.Idempotency(s.claims))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
