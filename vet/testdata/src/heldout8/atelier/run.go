package atelier

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes workshop stage logs and relays the outbox, both on NATS.
func Run(ctx context.Context, pool *pgxpool.Pool) error {
	b, err := adapters.Open(ctx, "nats://atelier-nats:4222")
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, b, outbox.Config{})
	if err != nil {
		return err
	}
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx) }()

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "workshop.stages", "atelier-stages")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(NewWorkshop().LogStage), consumer.Config{Name: "atelier-stages"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	runErr := c.Run(ctx)
	if relayErr := <-relayDone; runErr == nil {
		runErr = relayErr
	}
	return runErr
}
