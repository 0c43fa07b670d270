package dispatchhub

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Hub runs the planner, the outbox relay and the forwarder.
type Hub struct {
	Pool      *pgxpool.Pool
	BrokerURL string
}

func (h Hub) planner(ctx context.Context, b adapters.Broker) (*consumer.Consumer, error) {
	st, err := postgres.New(h.Pool)
	if err != nil {
		return nil, err
	}
	src, err := b.Source(ctx, "partner.events", "webhook-planner")
	if err != nil {
		return nil, err
	}
	return consumer.New(src, postgres.BatchHandlerFunc(Fanout{}.Plan), consumer.Config{Name: "webhook-planner"},
		middleware.Idempotency(st))
}

func (h Hub) forwarder(ctx context.Context, b adapters.Broker) (*consumer.Consumer, error) {
	src, err := b.Source(ctx, deliveries, "webhook-forwarder")
	if err != nil {
		return nil, err
	}
	return consumer.New(src, newForwarder(), consumer.Config{
		Name:        "webhook-forwarder",
		Concurrency: 32,
		Duplicates:  consumer.AllowDuplicates("subscribers dedupe by the Idempotency-Key header, which is the message ID"),
	}, middleware.Logging())
}

// Run runs all three until ctx ends.
func (h Hub) Run(ctx context.Context) error {
	b, err := adapters.Open(ctx, h.BrokerURL)
	if err != nil {
		return err
	}
	planner, err := h.planner(ctx, b)
	if err != nil {
		return err
	}
	forwarder, err := h.forwarder(ctx, b)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(h.Pool, b, outbox.Config{})
	if err != nil {
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- planner.Run(ctx) }()
	go func() { errs <- forwarder.Run(ctx) }()
	go func() { errs <- relay.Run(ctx) }()
	var first error
	for range 3 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
