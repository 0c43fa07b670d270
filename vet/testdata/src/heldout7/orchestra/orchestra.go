// Package orchestra books rehearsal rooms for the orchestra's sections and
// counts practice minutes from the members' metronome app.
package orchestra

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"

	"heldout7/platform/kit"
)

// configFor returns the consumer configuration every orchestra consumer
// shares.
func configFor(name string, concurrency int) consumer.Config {
	return consumer.Config{Name: "orchestra-" + name, Concurrency: concurrency}
}

// Run consumes room bookings and practice logs until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("orchestra: %w", err)
	}
	roomsSrc, err := broker.Source(ctx, "orchestra.rooms", "orchestra-rooms")
	if err != nil {
		return err
	}
	practiceSrc, err := broker.Source(ctx, "metronome.sessions", "orchestra-practice")
	if err != nil {
		return err
	}

	claimed := consumer.Chain(postgres.HandlerFunc(bookRoom), middleware.Idempotency(st))
	rooms, err := consumer.New(roomsSrc, consumer.Chain(claimed, middleware.Logging(), kit.Recoverer(log)), configFor("rooms", 2))
	if err != nil {
		return err
	}

	pcfg := configFor("practice", 8)
	pcfg.Duplicates = consumer.AllowDuplicates("practice minutes are a best-effort motivation chart; a replayed session is harmless")
	practice, err := consumer.New(practiceSrc, &practiceLog{pool: pool}, pcfg, middleware.Logging())
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rooms.Run(gctx) })
	g.Go(func() error { return practice.Run(gctx) })
	return g.Wait()
}
