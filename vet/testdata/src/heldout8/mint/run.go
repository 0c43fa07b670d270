package mint

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/mint/pgevents"
)

// Run consumes point commands from Kafka.
func Run(ctx context.Context, pool *pgxpool.Pool) error {
	m := NewMint(pgevents.NewSnapshots(pool))
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://loyalty-kafka:9092")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "loyalty.commands", "points-mint")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(m.Handle), consumer.Config{Name: "points-mint"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// Compact saves fresh snapshots of ids; it runs from the nightly job, not
// from a handler.
func Compact(ctx context.Context, pool *pgxpool.Pool, ids []string) error {
	snaps := pgevents.NewSnapshots(pool)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	stream := pgevents.On(tx)
	for _, id := range ids {
		w, err := snaps.Load(ctx, id)
		if err != nil {
			return err
		}
		evts, err := stream.After(ctx, id, w.Seq)
		if err != nil {
			return err
		}
		for _, e := range evts {
			w.Apply(e)
		}
		if err := snaps.Save(ctx, w); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
