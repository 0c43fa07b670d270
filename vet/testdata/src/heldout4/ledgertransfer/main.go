package ledgertransfer

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/ledgertransfer/transfers"
)

func loadCurrencies(ctx context.Context, pool *pgxpool.Pool) (map[string]bool, error) {
	var codes []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(code) FROM currencies WHERE active`).Scan(&codes); err != nil {
		return nil, fmt.Errorf("currencies: %w", err)
	}
	set := make(map[string]bool, len(codes))
	for _, c := range codes {
		set[c] = true
	}
	return set, nil
}

// Run books transfers and relays their events until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, brokerURL string) error {
	broker, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return err
	}
	currencies, err := loadCurrencies(ctx, pool)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, broker, outbox.Config{})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()

	src, err := broker.Source(ctx, "payments.transfer-requested", "transfer-booking")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &handler{svc: &transfers.Service{}, currencies: currencies}
	c, err := consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "transfer-booking", Concurrency: 8}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
